"""Built-in task families; importing this package registers them all."""
from m3gym.tasks.families import (  # noqa: F401
    classic,
    l1_text,  # noqa: F401
    l2_dials,
    l2_visual,
    l3_analysis,  # noqa: F401
    l3_lookup,  # noqa: F401
)
