"""What the README and docs/ say, read as a reader would follow it: the links they give
(files and anchors, as GitHub and mkdocs make them) and the commands they show (parsed
against the click command tree, without running anything). tests/test_docs.py uses it."""

from __future__ import annotations

import re
import shlex
import unicodedata
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import click

PROJECT = Path(__file__).resolve().parent.parent
OURS = ("runlist-harness", "reproduce_ert_timeout")
SEPARATORS = {"&&", "||", ";", "|", ">", ">>", "<", "2>", "2>&1"}
FENCE = re.compile(r"^```(\w*)")
LINK = re.compile(r"\[([^\]]*)\]\(([^)\s]+)\)")
CODE_SPAN = re.compile(r"`([^`]+)`")
PLACEHOLDER = re.compile(r"^(\.\.\.|[A-Z][A-Z0-9_.]*|.*<[^>]+>.*)$")


def pages() -> list[Path]:
    """The README and every page of docs/."""
    return [PROJECT / "README.md", *sorted((PROJECT / "docs").glob("*.md"))]


@dataclass(frozen=True)
class Block:
    """A fenced code block: its language and its lines."""

    language: str
    lines: list[str]
    start: int          # the line number of its first line, from 1


def split_markdown(text: str) -> tuple[list[tuple[int, str]], list[Block]]:
    """The prose lines (numbered from 1) and the fenced code blocks of a page."""
    prose: list[tuple[int, str]] = []
    blocks: list[Block] = []
    current: Block | None = None
    for number, line in enumerate(text.split("\n"), 1):
        fence = FENCE.match(line)
        if current is None and fence:
            current = Block(fence.group(1), [], number + 1)
        elif current is not None and line.startswith("```"):
            blocks.append(current)
            current = None
        elif current is not None:
            current.lines.append(line)
        else:
            prose.append((number, line))
    return prose, blocks


# -- anchors --------------------------------------------------------------------------------

def _heading_text(line: str) -> str:
    text = line.lstrip("#").strip()
    text = LINK.sub(r"\1", text)
    return text.replace("`", "")


def github_slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, each space a hyphen."""
    kept = "".join(c for c in heading.lower()
                   if c in " -_" or unicodedata.category(c)[0] in "LN")
    return kept.replace(" ", "-")


def mkdocs_slug(heading: str) -> str:
    """Python-Markdown's toc slugify (mkdocs' default), as `markdown.extensions.toc` has it."""
    value = unicodedata.normalize("NFKD", heading).encode("ascii", "ignore").decode("ascii")
    value = re.sub(r"[^\w\s-]", "", value).strip().lower()
    return re.sub(r"[-\s]+", "-", value)


def anchors(page: Path) -> dict[str, set[str]]:
    """Each heading's anchors on `page`, GitHub's and mkdocs', repeated headings numbered."""
    prose, _ = split_markdown(page.read_text(encoding="utf-8"))
    found: dict[str, set[str]] = {"github": set(), "mkdocs": set()}
    for name, slug in (("github", github_slug), ("mkdocs", mkdocs_slug)):
        seen: dict[str, int] = {}
        for _, line in prose:
            if re.match(r"^#{1,6} ", line):
                base = slug(_heading_text(line))
                count = seen.get(base, 0)
                seen[base] = count + 1
                found[name].add(base if count == 0 else f"{base}-{count}")
    return found


@dataclass(frozen=True)
class Link:
    page: Path
    line: int
    target: str


def links(page: Path) -> Iterator[Link]:
    """Every Markdown link in the prose of `page` (code spans and blocks are not links)."""
    prose, _ = split_markdown(page.read_text(encoding="utf-8"))
    for number, line in prose:
        for match in LINK.finditer(CODE_SPAN.sub("code", line)):
            yield Link(page, number, match.group(2))


def broken(link: Link) -> str | None:
    """Why `link` leads nowhere, or None."""
    if re.match(r"^[a-z]+:", link.target):
        return None if link.target.startswith("https://") else "not an https:// address"
    path, _, anchor = link.target.partition("#")
    target = (link.page.parent / path).resolve() if path else link.page
    if not target.is_relative_to(PROJECT) or not target.exists():
        return f"{path} does not exist"
    if anchor:
        if target.suffix != ".md":
            return f"an anchor into {path}, which is no Markdown page"
        given = anchors(target)
        for name in ("github", "mkdocs"):
            if anchor not in given[name]:
                return f"{target.name} has no heading whose {name} anchor is #{anchor}"
    return None


# -- commands -------------------------------------------------------------------------------

@dataclass(frozen=True)
class Example:
    """One command line a page shows, from `runlist-harness` or `reproduce_ert_timeout` on."""

    page: Path
    line: int
    words: list[str]
    in_prose: bool = False      # a span of prose may name an option without its value

    def __str__(self) -> str:
        return f"{self.page.name}:{self.line}: {' '.join(self.words)}"


def _simple_commands(words: list[str]) -> Iterator[list[str]]:
    current: list[str] = []
    for word in words:
        if word in SEPARATORS:
            yield current
            current = []
        else:
            current.append(word)
    yield current


def script_examples(page: Path, line: int, script: str,
                    in_prose: bool = False) -> Iterator[Example]:
    """The harness's command lines in a shell script: one line at a time, a line ending in
    a backslash or inside an open quote joined to the next, scripts given to `sh -c`
    read too."""
    pending = ""
    start = line
    for offset, text in enumerate(script.split("\n")):
        if not pending:
            start = line + offset
        pending += text + "\n"
        if pending.endswith("\\\n"):
            pending = pending[:-2]
            continue
        try:
            words = shlex.split(pending, comments=True)
        except ValueError:          # an open quote: the command goes on
            continue
        pending = ""
        yield from words_examples(page, start, words, in_prose)


def words_examples(page: Path, line: int, words: list[str],
                   in_prose: bool) -> Iterator[Example]:
    for command in _simple_commands(words):
        for index, word in enumerate(command):
            if "\n" in word and any(name in word for name in OURS):
                yield from script_examples(page, line, word)
            elif Path(word).name in OURS:
                yield Example(page, line, command[index:], in_prose)
                break


def examples(page: Path) -> Iterator[Example]:
    """Every example of the harness's commands on `page`: in ```sh blocks, after `$ ` in
    other blocks, and in code spans of the prose that begin with a command's name."""
    prose, blocks = split_markdown(page.read_text(encoding="utf-8"))
    for block in blocks:
        if block.language in ("sh", "bash", "shell"):
            yield from script_examples(page, block.start, "\n".join(block.lines))
        else:
            for offset, text in enumerate(block.lines):
                if text.startswith("$ "):
                    yield from script_examples(page, block.start + offset, text[2:])
    commands = command_names()
    for number, span in code_spans(prose):
        first = span.split(" ")[0]
        if first in OURS:
            yield from script_examples(page, number, span, in_prose=True)
        elif first in commands and len(span.split(" ")) > 1:
            # `run --resume REPORT`, `report bundle REPORT`: a command of runlist-harness
            yield from script_examples(page, number, f"runlist-harness {span}", in_prose=True)


def code_spans(prose: list[tuple[int, str]]) -> Iterator[tuple[int, str]]:
    """The code spans of the prose, a paragraph at a time (a span may wrap), with the line
    each begins on."""
    paragraph: list[tuple[int, str]] = []
    for number, line in [*prose, (0, "")]:
        if line.strip():
            paragraph.append((number, line))
            continue
        text = " ".join(part for _, part in paragraph)
        starts = [0]
        for _, part in paragraph:
            starts.append(starts[-1] + len(part) + 1)
        for match in CODE_SPAN.finditer(text):
            index = max(i for i, start in enumerate(starts[:-1]) if start <= match.start())
            yield paragraph[index][0], " ".join(match.group(1).split())
        paragraph = []


def command_names() -> set[str]:
    from harness.app.cli import COMMANDS
    return set(COMMANDS)


def option_spans(page: Path) -> Iterator[tuple[int, str]]:
    """Code spans of the prose that are an option alone (`--flaky-as bad`)."""
    prose, _ = split_markdown(page.read_text(encoding="utf-8"))
    for number, span in code_spans(prose):
        if re.match(r"^--[a-z][\w-]*( [^-]\S*)?$", span):
            yield number, span.split(" ")[0].partition("=")[0]


def every_option() -> set[str]:
    """Every option of every command of runlist-harness."""
    from harness.app.cli import main
    found: set[str] = set()
    pending: list[click.Command] = [main]
    while pending:
        command = pending.pop()
        for param in command.params:
            if isinstance(param, click.Option):
                found.update((*param.opts, *param.secondary_opts))
        if isinstance(command, click.Group):
            context = click.Context(command)
            pending += [c for name in command.list_commands(context)
                        if (c := command.get_command(context, name)) is not None]
    return found | {"--help"}


def python_scripts(page: Path) -> Iterator[tuple[int, str, list[str]]]:
    """The project's own scripts a page runs with `python SCRIPT.py`, with the options it
    gives them."""
    prose, blocks = split_markdown(page.read_text(encoding="utf-8"))
    texts = [(b.start + i, t) for b in blocks if b.language in ("sh", "bash", "shell")
             for i, t in enumerate(b.lines)]
    texts += list(code_spans(prose))
    for number, text in texts:
        for match in re.finditer(r"\bpython3? ((?:benchmarks|tests)/[\w/]+\.py)([^#]*)", text):
            yield number, match.group(1), re.findall(r"--[a-z][\w-]*", match.group(2))


def _root(name: str) -> click.Command:
    from harness.app.cli import main
    if name == "runlist-harness":
        return main
    command = main.get_command(click.Context(main), "reproduce")
    assert command is not None
    return command


def _option(command: click.Command, word: str) -> click.Option | None:
    for param in command.params:
        if isinstance(param, click.Option) and word in (*param.opts, *param.secondary_opts):
            return param
    return None


def _depths(text: str) -> object:
    from harness.search.sweep import parse_depths
    return parse_depths(text)


def _chunks(text: str) -> object:
    from harness.search.sweep import parse_list
    return parse_list(text, "--chunks")


# options whose values the harness parses itself, by their click parameter name
VALUE_PARSERS = {"depths_text": _depths, "chunks_text": _chunks}


def _check_value(option: click.Option, value: str) -> str | None:
    if PLACEHOLDER.match(value):
        return None
    if isinstance(option.type, click.Choice):
        wrong = [v for v in value.split("|") if v not in option.type.choices]
        if wrong:
            return f"{option.opts[0]} takes {', '.join(option.type.choices)}, not {wrong[0]}"
    if not isinstance(option.type, (click.Path, click.File, click.types.StringParamType,
                                    click.Choice)):
        try:
            option.type.convert(value, option, None)
        except click.BadParameter as err:
            return f"{option.opts[0]} {value}: {err.message}"
    parse = VALUE_PARSERS.get(str(option.name))
    if parse is not None:
        from harness.model.errors import HarnessError
        try:
            parse(value)
        except HarnessError as err:
            return str(err)
    if option.name == "profile":
        from harness.model.errors import HarnessError
        from harness.sim.profiles import parse_profile
        try:
            parse_profile(value)
        except HarnessError as err:
            return f"--profile {value}: {err}"
    return None


def check(example: Example) -> str | None:
    """What is wrong with an example's command, options or arguments, or None."""
    words = [w.strip("[]") for w in example.words]
    command = _root(Path(words[0]).name)
    rest = words[1:]
    path = [Path(words[0]).name]
    while isinstance(command, click.Group):
        if rest and rest[0] in ("--help", "-h", "--version"):
            return None
        if not rest:
            return None              # the group alone: its help
        if rest[0].startswith("-"):
            return f"{' '.join(path)} has no option {rest[0]} before its command"
        sub = command.get_command(click.Context(command), rest[0])
        if sub is None:
            return f"{' '.join(path)} has no command {rest[0]}"
        path.append(rest.pop(0))
        command = sub
    positional: list[str] = []
    while rest:
        word = rest.pop(0)
        if word == "--":
            if rest and Path(rest[0]).name in OURS:
                return check(Example(example.page, example.line, rest, example.in_prose))
            positional.append(word)
            break
        if word.startswith("-") and len(word) > 1 and not word[1].isdigit():
            name, equals, value = word.partition("=")
            if name in ("--help", "-h"):
                return None
            option = _option(command, name)
            if option is None:
                return f"{' '.join(path)} has no option {name}"
            if not option.is_flag and not option.count:
                if not equals:
                    if not rest:
                        return None if example.in_prose else f"{name} needs a value"
                    value = rest.pop(0)
                wrong = _check_value(option, value)
                if wrong:
                    return wrong
        else:
            positional.append(word)
    arguments = [p for p in command.params if isinstance(p, click.Argument)]
    if "--" not in positional and all(a.nargs >= 0 for a in arguments):
        most = sum(a.nargs for a in arguments)
        if len(positional) > most:
            return (f"{' '.join(path)} takes {most} argument(s), given "
                    f"{' '.join(positional)}")
    return None
