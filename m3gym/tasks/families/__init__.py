"""Built-in task families, one module per family; importing this package registers them all.

Every module in this package whose name does not start with ``_`` is imported in sorted order
(a new family is one new file); ``_``-prefixed modules hold code shared by several families.
"""

import importlib
import pkgutil

for _module in sorted(m.name for m in pkgutil.iter_modules(__path__)):
    if not _module.startswith("_"):
        importlib.import_module(f"{__name__}.{_module}")
