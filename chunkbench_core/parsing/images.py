"""Embedded images: caption them or count and report them, never drop them silently (a reader
of the results must know what the text leaves out).

With ``ParseOptions.caption_source`` set, each image's bytes go to it and the
returned text becomes an ``image_caption`` unit in document order. Without it,
or when the source fails or returns nothing for an image, the image is counted
in ``stats['images']`` (all images) and ``stats['images_uncaptioned']`` and a
warning says how many images were left without text. Images whose caption request failed (the caption
service's one line is in the warning) are counted in ``stats['images_caption_failed']`` too: such a parse
is not reused by the next parse, which asks the service again.
"""

from __future__ import annotations

from chunkbench_core.parsing.builder import MarkdownBuilder
from chunkbench_core.parsing.options import ParseOptions
from chunkbench_core.redaction import describe_error


class ImageReporter:
    def __init__(self, options: ParseOptions) -> None:
        self._source = options.caption_source
        self.total = 0
        self.captioned = 0
        self.failures: list[str] = []
        self.source_failed = 0  # images whose caption request failed (not an empty caption)

    def handle(self, blob: bytes | None, name: str, builder: MarkdownBuilder) -> None:
        self.total += 1
        if self._source is None:
            return
        if blob is None:
            self.failures.append(f"{name}: image data not found in the file")
            return
        try:
            caption = self._source(blob)
        except Exception as exc:  # a failing caption service must not lose the document
            self.source_failed += 1
            self.failures.append(f"{name}: caption source failed ({describe_error(exc)})")
            return
        if not isinstance(caption, str) or not caption.strip():
            self.failures.append(f"{name}: caption source returned no text")
            return
        if builder.add_unit("image_caption", caption) is not None:
            self.captioned += 1

    def stats(self) -> dict[str, int]:
        stats = {"images": self.total, "images_uncaptioned": self.total - self.captioned}
        if self.source_failed:
            # the parsed store parses such a document again on the next parse: the service may be fixed by then
            stats["images_caption_failed"] = self.source_failed
        return stats

    def warnings(self) -> list[str]:
        out: list[str] = []
        missing = self.total - self.captioned
        if missing and self._source is None:
            out.append(
                f"{missing} embedded image(s) not captioned: no caption source configured "
                "(set ParseOptions.caption_source); their content is not in the text"
            )
        elif missing:
            out.append(f"{missing} embedded image(s) not captioned: " + "; ".join(self.failures[:5]))
        return out
