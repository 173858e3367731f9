"""The bundled demo project: synthetic sources (Python) and SQL assets over them."""

import os

#: The demo's project folder (SQL files + ``sources.py``).
DEMO_PROJECT_DIR = os.path.join(os.path.dirname(__file__), "project")
