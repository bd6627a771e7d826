"""Serve m3gym through OpenEnv (``pip install 'm3gym[openenv]'``; docs/openenv.md).

``m3gym openenv --port PORT`` runs OpenEnv's own ``create_app`` over :class:`M3GymEnvironment`
(``server.py``); :class:`M3GymEnv` (``client.py``) is the typed WebSocket client and
``models.py`` holds the action, observation and state types. Only this subpackage imports
``openenv``: ``import m3gym`` never needs it. This folder is also the OpenEnv package
(``openenv.yaml`` with its ``validation:`` block, ``Dockerfile``): ``openenv validate
m3gym/openenv`` checks it.
"""
