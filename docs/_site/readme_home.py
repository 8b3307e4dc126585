"""A mkdocs hook: the site's home page is the repository's README.md.

The README is the front page on GitHub and links to `docs/PAGE.md`; on the site the same
text is the home page, with those links made relative to the documentation folder. Keeping
one text means the front page and the site's home cannot drift apart.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

HOME = "index.md"
DOCS_LINK = re.compile(r"\]\(docs/")


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    if page.file.src_uri != HOME:
        return markdown
    readme = Path(config.config_file_path).parent / "README.md"
    return DOCS_LINK.sub("](", readme.read_text(encoding="utf-8"))
