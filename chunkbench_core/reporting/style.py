"""The reports' base stylesheet (``static/report.css``), inlined in every file: no external resources."""

from .webfiles import read

CSS = read("report.css")
