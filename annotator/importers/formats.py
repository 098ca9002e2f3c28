"""The built-in importers, imported here in detection order so that each registers itself."""

from annotator.importers import chat, mad, who_and_when  # noqa: F401
from annotator.importers import mast_export  # noqa: F401
