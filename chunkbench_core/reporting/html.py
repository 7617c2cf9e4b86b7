"""HTML building blocks shared by the reports: escaping, embedded JSON, tables, the page shell.

Safety rules every report follows:

- every value that comes from documents, questions, answers, settings or the database
  goes through :func:`esc` (text and attribute values);
- data for the in-page scripts is embedded with :func:`json_script`: a
  ``<script type="application/json">`` element whose text has ``<``, ``>``, ``&`` and
  U+2028/U+2029 written as ``\\uXXXX`` escapes, so no value can close the element or
  open a comment/script; NaN and infinities become ``null`` (``JSON.parse`` rejects them);
- the page's own scripts build the DOM with ``textContent`` / ``createElement`` only;
- :func:`page` sets a Content-Security-Policy that allows only the page's own inline
  scripts (by SHA-256), inline styles and ``data:`` images: even a payload that slipped
  through escaping could not run, and the page cannot load anything from a network.
"""

from __future__ import annotations

import base64
import hashlib
import html
import json
import math
from typing import Any, Iterable, Iterator, Sequence

_JSON_ESCAPES = {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028", "\u2029": "\\u2029"}


def _absent(value: object) -> bool:
    """None, a float NaN, pandas' NaT / NA: shown as nothing, never as "None", "nan" or "NaT"."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return True
    return type(value).__name__ in ("NaTType", "NAType")


def esc(value: object) -> str:
    """Escape ``value`` for HTML text or a quoted attribute value (None, NaN, NaT -> empty)."""
    return html.escape("" if _absent(value) else str(value), quote=True)


_PLAIN = (str, int, bool, type(None))


def _json_ready(value: Any) -> Any:
    if type(value) in _PLAIN:  # most values of a big payload: returned at once
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {str(k): _json_ready(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_ready(v) for v in value]
    if hasattr(value, "item") and not isinstance(value, (str, bytes)):  # numpy scalars
        return _json_ready(value.item())
    return value


def script_json(data: Any) -> str:
    """JSON text that is safe inside a ``<script>`` element (no ``<``, ``>``, ``&`` characters)."""
    text = json.dumps(_json_ready(data), ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    for character, escaped in _JSON_ESCAPES.items():  # one C pass each (tens of MB for 20,000 questions)
        if character in text:
            text = text.replace(character, escaped)
    return text


def json_script(element_id: str, data: Any) -> str:
    """A non-executable ``<script type="application/json">`` element holding ``data``."""
    return f'<script type="application/json" id="{esc(element_id)}">{script_json(data)}</script>'


class ObjectStream:
    """A JSON object's members given one by one (``(key, value)`` pairs from an iterator): what
    :func:`json_script_parts` writes as an object without the whole of it ever being held."""

    def __init__(self, items: Iterable[tuple[str, Any]]) -> None:
        self._items = iter(items)

    def __iter__(self) -> Iterator[tuple[str, Any]]:
        return self._items


def script_json_parts(data: Any, depth: int = 2) -> Iterator[str]:
    """:func:`script_json` of ``data`` in pieces: the members of objects (and items of lists) down to
    ``depth`` levels are encoded one at a time; an :class:`ObjectStream` is walked as it is written, and a
    callable member is called when it is reached. Joined, the pieces are exactly one JSON text."""
    if callable(data) and not isinstance(data, type):
        data = data()
    if isinstance(data, ObjectStream) or (depth > 0 and isinstance(data, dict)):
        yield "{"
        for i, (key, member) in enumerate(data if isinstance(data, ObjectStream) else data.items()):
            yield ("," if i else "") + script_json(str(key)) + ":"
            yield from script_json_parts(member, depth - 1)
        yield "}"
    elif depth > 0 and isinstance(data, (list, tuple)):
        yield "["
        for i, item in enumerate(data):
            if i:
                yield ","
            yield from script_json_parts(item, depth - 1)
        yield "]"
    else:
        yield script_json(data)


def json_script_parts(element_id: str, data: Any) -> Iterator[str]:
    """:func:`json_script` in pieces (:func:`script_json_parts`)."""
    yield f'<script type="application/json" id="{esc(element_id)}">'
    yield from script_json_parts(data)
    yield "</script>"


def script_hash(source: str) -> str:
    """The CSP source expression that allows the inline script ``source``."""
    digest = hashlib.sha256(source.encode("utf-8")).digest()
    return f"'sha256-{base64.b64encode(digest).decode()}'"


def png_img(png: bytes, element_id: str, alt: str, css_class: str = "plot") -> str:
    """An ``<img>`` with the PNG inlined as a data URI."""
    data = base64.b64encode(png).decode("ascii")
    return f'<img id="{esc(element_id)}" class="{esc(css_class)}" alt="{esc(alt)}" src="data:image/png;base64,{data}">'


def _attr(name: str, value: str) -> str:
    return f' {name}="{esc(value)}"' if value else ""


def label_html(key: str, label: str) -> str:
    """A configuration's label (:func:`chunkbench_core.labels.configuration_label`) in a page, marked with the
    configuration's key so a reader's tools (and the tests) find every place that names it."""
    return f"<span class='config-label' data-configuration='{esc(key)}'>{esc(label)}</span>"


def scroll_box(inner: str, label: str = "") -> str:
    """A box that scrolls sideways on its own when ``inner`` (a wide table) is wider than the page;
    focusable, so the keyboard can scroll it too."""
    return f"<div class='scroll' role='region' tabindex='0'{_attr('aria-label', label)}>{inner}</div>"


def table(
    headers: Sequence[str],
    rows: Iterable[Sequence[str]],
    *,
    element_id: str = "",
    numeric: Sequence[bool] | None = None,
    row_classes: Sequence[str] | None = None,
    caption: str = "",
    raw_headers: bool = False,
) -> str:
    """A table from already-escaped cell HTML (headers are escaped here unless ``raw_headers``), in its own
    sideways-scrolling box, so a wide table never widens the page."""
    numeric = list(numeric) if numeric is not None else [False] * len(headers)
    parts = [f"<table{_attr('id', element_id)}>"]
    if caption:
        parts.append(f"<caption>{esc(caption)}</caption>")
    parts.append(
        "<thead><tr>"
        + "".join(f'<th scope="col">{h if raw_headers else esc(h)}</th>' for h in headers)
        + "</tr></thead><tbody>"
    )
    for i, row in enumerate(rows):
        css = row_classes[i] if row_classes is not None and i < len(row_classes) else ""
        parts.append(
            f"<tr{_attr('class', css)}>"
            + "".join(
                f'<td class="num">{cell}</td>' if numeric[j] else f"<td>{cell}</td>" for j, cell in enumerate(row)
            )
            + "</tr>"
        )
    parts.append("</tbody></table>")
    return scroll_box("".join(parts), caption or element_id.replace("-", " "))


def definition_list(items: Iterable[tuple[str, str]]) -> str:
    """``<dl>`` of (escaped-here label, already-escaped value HTML)."""
    return "<dl class='kv'>" + "".join(f"<dt>{esc(k)}</dt><dd>{v}</dd>" for k, v in items) + "</dl>"


def nav(links: Sequence[tuple[str, str]], current: str) -> str:
    """Links between the report files (relative names, so they work from file://)."""
    items = []
    for label, href in links:
        if href == current:
            items.append(f'<span aria-current="page">{esc(label)}</span>')
        else:
            items.append(f'<a href="{esc(href)}">{esc(label)}</a>')
    return "<nav class='reports'>" + " · ".join(items) + "</nav>"


def page(title: str, body: str, *, css: str, scripts: Sequence[str] = (), data: str = "") -> str:
    """A complete self-contained HTML document (:func:`page_parts` joined)."""
    return "".join(page_parts(title, body, css=css, scripts=scripts, data=data))


def page_parts(
    title: str, body: str, *, css: str, scripts: Sequence[str] = (), data: str | Iterable[str] = ""
) -> Iterator[str]:
    """A complete self-contained HTML document, in pieces (written as they come: a report's data can be
    tens of MB).

    ``css`` and ``scripts`` are the package's stylesheets and page scripts (:mod:`.webfiles`), inlined:
    the page works offline from ``file://`` and from the report server alike. ``scripts`` are allowed
    by hash in the CSP and run in order (the shared helpers first);
    ``data`` is the already-built ``json_script`` elements, or their pieces (never executed).
    """
    if any("</script" in s.lower() for s in scripts):
        raise ValueError("an inline script must not contain '</script'")
    hashes = " ".join(script_hash(s) for s in scripts) or "'none'"
    policy = (
        f"default-src 'none'; img-src data:; style-src 'unsafe-inline'; script-src {hashes}; "
        "base-uri 'none'; form-action 'none'"
    )
    script_tags = "".join(f"<script>{s}</script>" for s in scripts)
    yield (
        "<!doctype html>\n<html lang='en'><head><meta charset='utf-8'>"
        f'<meta http-equiv="Content-Security-Policy" content="{esc(policy)}">'
        "<meta name='viewport' content='width=device-width, initial-scale=1'>"
        f"<title>{esc(title)}</title><style>{css}</style></head><body>"
    )
    yield body
    if isinstance(data, str):
        yield data
    else:
        yield from data
    yield f"{script_tags}</body></html>\n"
