"""The web app for people in the loop: write, judge and label pages (blinded), invite and
Prolific entry, and an admin area. Needs the ``web`` extra (FastAPI, Jinja2, uvicorn)."""

from heart.web._app import create_app
from heart.web._session import study_secret

__all__ = ["create_app", "study_secret"]
