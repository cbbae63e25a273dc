"""The fuzz layer's cases, one reader of outside data at a time: study files, bundles,
completions, judgments and labels tables, capability index files, and the web app's forms and
links. Each reader draws a case with hypothesis: structured input with hostile values, and raw
damage to a valid file's bytes. :func:`known` holds hostile cases written by hand (defects
found before), so that the suite always tries them."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable
from typing import Any
from urllib.parse import quote

import yaml
from hypothesis import strategies as st

from heart.config import STUDY_FILE
from heart.people import CHOICES
from heart.strategies import load_taxonomy
from heart.web._forms import MAX_FIELDS, MAX_FORM_BYTES, URLENCODED

from .fuzz_layer import (
    ADMIN_TOKEN,
    HUMAN,
    SYSTEMS,
    WORK,
    Command,
    Request,
    Template,
)
from .hostile import WORDS, damaged, json_text, json_values, texts, yaml_snippets

STUDY = f"{WORK}/study"


def either(data: st.DataObject, good: str, hostile: st.SearchStrategy[str], odds: int = 2) -> str:
    """A hostile value one time in ``odds``, else ``good``."""
    return data.draw(hostile) if data.draw(st.integers(1, odds)) == 1 else good


# -- study files ------------------------------------------------------------------------------

PATHS = [
    "x" * 300,  # longer than a file name may be
    "/".join(["x" * 200] * 30),  # longer than a path may be
    "a\x00b",
    ".",
    "/",
    "../nothing/x",
    "~/nothing",
    "",
]
"""Paths a study file may name that no reader can open."""

STORES = [
    "sqlite:///elsewhere.db",
    "sqlite:///missing/folder/heart.db",
    "sqlite://",
    "not a url",
    "mysql://user@/nothing",
    "",
    "postgresql+psycopg://user@127.0.0.1:1/nothing",
    *(f"sqlite:///{path}" for path in PATHS),
]
"""Store URLs a study file may name (a relative path is taken from where heart runs: the
case's folder)."""

PATH_SETTINGS = {
    ("items", "esconv"): PATHS,
    ("ratings", "capability_index"): PATHS,
    ("store",): STORES,
}
"""The settings that name a file, and what to name."""

setting_values = json_values | st.sampled_from(STORES)


def _places(value: Any) -> list[tuple[Any, ...]]:
    """Every path to a value inside parsed settings, each container visited once (YAML
    aliases can make a list that holds itself) and without recursion (they can nest deep)."""
    out: list[tuple[Any, ...]] = []
    seen: set[int] = set()
    todo: list[tuple[Any, tuple[Any, ...]]] = [(value, ())]
    while todo:
        value, path = todo.pop()
        out.append(path)
        if isinstance(value, dict | list) and id(value) not in seen:
            seen.add(id(value))
            inner = value.items() if isinstance(value, dict) else enumerate(value)
            todo.extend((item, (*path, key)) for key, item in reversed(list(inner)))
    return out


def _changed_settings(data: st.DataObject, settings: dict[str, Any]) -> None:
    """One to three settings changed to hostile values, deleted or added, in place."""
    for _ in range(data.draw(st.integers(1, 3))):
        path = data.draw(st.sampled_from(_places(settings)[1:] or [("name",)]))
        parent: Any = settings
        for key in path[:-1]:
            parent = parent[key]
        action = data.draw(st.sampled_from(["set", "set", "delete", "add", "path"]))
        if action == "path":
            place = data.draw(st.sampled_from(sorted(PATH_SETTINGS)))
            section = settings.setdefault(place[0], {}) if len(place) > 1 else settings
            if isinstance(section, dict):
                section[place[-1]] = data.draw(st.sampled_from(PATH_SETTINGS[place]))
        elif action == "delete" and isinstance(parent, dict):
            parent.pop(path[-1], None)
        elif action == "add" and isinstance(parent, dict):
            key = data.draw(texts | st.sampled_from(["store", "extra", "name"]))
            parent[key] = data.draw(setting_values)
        else:
            parent[path[-1]] = data.draw(setting_values)


def study_file(data: st.DataObject, text: str) -> bytes:
    """A study file made from ``text``: settings changed to hostile values, a setting
    rewritten as hostile YAML, or both; then perhaps its bytes damaged."""
    try:
        settings = yaml.safe_load(text)
    except yaml.YAMLError:
        settings = None
    if not isinstance(settings, dict):  # damaged already: damage it more
        return damaged(data, text.encode("utf-8", "surrogatepass"))
    how = data.draw(st.sampled_from(["settings", "yaml", "both"]))
    if how != "yaml":
        _changed_settings(data, settings)
    key = data.draw(st.sampled_from([*map(str, settings), "store", "systems", "extra"]))
    if how != "settings":
        settings.pop(key, None)
    try:
        written = yaml.safe_dump(settings, allow_unicode=True, sort_keys=False) if settings else ""
    except (yaml.YAMLError, RecursionError, ValueError):  # a value YAML cannot write
        written = text
    if how != "settings":
        written += data.draw(yaml_snippets(key)) + "\n"
    return damaged(data, written.encode("utf-8", "surrogatepass"))


def study_case(data: st.DataObject, template: Template) -> Command:
    """A study file read by `heart check` (which changes nothing, whatever it finds) or by a
    command that opens the study (`heart raters list`)."""
    command = data.draw(st.sampled_from([("check",), ("raters", "list")]))
    return Command(
        args=(*command, "--study", STUDY),
        files=((f"study/{STUDY_FILE}", study_file(data, template.study_text)),),
        target=None,
        read_only=command == ("check",),
    )


# -- tables: completions, judgments, labels ----------------------------------------------------


def table_columns(template: Template) -> dict[str, dict[str, st.SearchStrategy[Any]]]:
    """Each kind of table: its columns, each with values the study knows (or nearly)."""
    systems = [*SYSTEMS, HUMAN, "m9"]
    names = load_taxonomy().names
    return {
        "completions": {
            "item_id": st.sampled_from(["i0", "i1", "i9"]),
            "system": st.sampled_from(systems),
            "contributor": st.sampled_from(["", "p1", "p2"]),
            "text": st.sampled_from(["I can hear how hard this is.", "  "]),
        },
        "judgments": {
            "item_id": st.sampled_from(["i0", "i1"]),
            "judge": st.sampled_from(["g1", "r1", "r2"]),
            "a_system": st.sampled_from(systems),
            "b_system": st.sampled_from(systems),
            "a_contributor": st.sampled_from(["", "p1"]),
            "b_contributor": st.sampled_from(["", "p1"]),
            "winner": st.sampled_from(["a", "b", "tie", " B ", "c"]),
            "strength": st.sampled_from(["1", "5", "0", "3.5"]) | st.integers(-1, 7),
            "source": st.sampled_from(["human", "llm", "", "robot"]),
            "rationale": st.sampled_from(["It listens first."]),
        },
        "labels": {
            "completion_id": st.sampled_from([*template.completions, "cp-missing"]),
            "rater": st.sampled_from([*template.raters, "q2"]),
            "strategies": st.sampled_from([names[0], f"{names[1]}; {names[2]}", "", "Not one"])
            | st.lists(st.sampled_from(names), max_size=3),
        },
    }


def _quoted(cell: str) -> str:
    return '"' + cell.replace('"', '""') + '"' if re.search('[",\r\n]', cell) else cell


def table_file(data: st.DataObject, columns: dict[str, st.SearchStrategy[Any]], csv: bool) -> bytes:
    """Rows of a table file, each with values the study knows and up to three made hostile
    (hostile text, the wrong JSON type, or left out); now and then an unknown column, a
    repeated row, a line that is no object or a row of too few cells."""
    rows: list[dict[str, Any]] = []
    for _ in range(data.draw(st.integers(0, 4))):
        if rows and data.draw(st.integers(0, 5)) == 0:
            rows.append(dict(data.draw(st.sampled_from(rows))))
            continue
        row = {name: data.draw(good) for name, good in columns.items()}
        for _ in range(data.draw(st.integers(0, 3))):
            name = data.draw(st.sampled_from(list(columns)))
            how = data.draw(st.sampled_from(["text", "text", "json", "drop"]))
            if how == "drop":
                row.pop(name, None)
            else:
                row[name] = data.draw(json_values if how == "json" and not csv else texts)
        if data.draw(st.integers(0, 9)) == 0:
            row[data.draw(texts)] = data.draw(json_values)
        rows.append(row)
    if not csv:
        lines = []
        for row in rows:
            line = json_text(row)
            if data.draw(st.integers(0, 19)) == 0:  # a line that is no object
                line = data.draw(st.sampled_from(["[]", "1", '"x"', "null", "[" * 5000]))
            lines.append(line + "\n")
        return "".join(lines).encode("utf-8", "surrogatepass")
    header = list(columns) + sorted({k for r in rows for k in r if k not in columns})
    if data.draw(st.integers(0, 19)) == 0:
        header.append(data.draw(st.sampled_from(header)))  # a column named twice
    out = []
    for row in [dict(zip(header, header, strict=True)), *rows]:
        cells = ["" if row.get(k) is None else str(row[k]) for k in header]
        if data.draw(st.integers(0, 19)) == 0:
            cells = cells[: data.draw(st.integers(0, len(cells)))]  # a row of too few cells
        out.append(",".join(_quoted(c) for c in cells) + "\n")
    return "".join(out).encode("utf-8", "surrogatepass")


def import_table(kind: str, name: str, raw: bytes) -> Command:
    return Command(
        args=("import", f"{WORK}/{name}", "--table", kind, "--study", STUDY), files=((name, raw),)
    )


def table_case(kind: str) -> Callable[[st.DataObject, Template], Command]:
    def case(data: st.DataObject, template: Template) -> Command:
        suffix = data.draw(st.sampled_from(["csv", "csv", "jsonl", "jsonl", "CSV", "txt"]))
        raw = table_file(data, table_columns(template)[kind], suffix.lower() == "csv")
        return import_table(kind, f"input.{suffix}", damaged(data, raw))

    case.__doc__ = f"A {kind} file (CSV or JSON Lines) imported with `heart import`."
    return case


# -- bundles ----------------------------------------------------------------------------------


def _resign(bundle: dict[str, bytes]) -> None:
    """Put every listed file's sha256 in the manifest again (so damage reaches the rows)."""
    try:
        manifest = json.loads(bundle["manifest.json"])
        for name, entry in manifest["files"].items():
            entry["sha256"] = hashlib.sha256(bundle[name]).hexdigest()
        bundle["manifest.json"] = json.dumps(manifest).encode()
    except (ValueError, KeyError, TypeError, AttributeError, RecursionError):
        pass  # a manifest damaged past re-signing is itself the input


def _damage_rows(data: st.DataObject, raw: bytes) -> bytes:
    """A row of a JSON Lines file with a value made hostile, a column dropped or added, the
    row repeated, or the line replaced."""
    lines = [line for line in raw.decode("utf-8", "replace").split("\n") if line] or ["{}"]
    at = data.draw(st.integers(0, len(lines) - 1))
    try:
        row = json.loads(lines[at])
    except (ValueError, RecursionError):  # damaged already
        row = {}
    if not isinstance(row, dict):
        row = {}
    action = data.draw(st.sampled_from(["set", "set", "set", "drop", "add", "repeat", "line"]))
    if action == "set" and row:
        row[data.draw(st.sampled_from(sorted(row)))] = data.draw(json_values | texts)
    elif action == "drop" and row:
        del row[data.draw(st.sampled_from(sorted(row)))]
    elif action == "add":
        row[data.draw(texts)] = data.draw(json_values)
    elif action == "repeat":
        lines.insert(at, lines[at])
    if action == "line":
        lines[at] = data.draw(
            st.sampled_from(["[]", "null", "1e999", "[" * 5000, "{", '"\\ud800"'])
        )
    elif action != "repeat":
        lines[at] = json_text(row)
    return "".join(line + "\n" for line in lines).encode("utf-8", "surrogatepass")


def _damage_manifest(data: st.DataObject, raw: bytes) -> bytes:
    try:
        manifest = json.loads(raw)
        entries = manifest["files"]
    except (ValueError, KeyError, TypeError, RecursionError):
        return damaged(data, raw)
    if not isinstance(entries, dict):  # damaged already: damage it more
        return damaged(data, raw)
    names = sorted(entries)
    action = data.draw(st.sampled_from(["format", "version", "files", "drop", "list", "entry"]))
    if action in ("format", "version", "files"):
        manifest[action] = data.draw(json_values)
    elif action == "drop" and names:
        del entries[data.draw(st.sampled_from(names))]
    elif action == "list":
        entries[data.draw(texts | st.just("extra.jsonl"))] = {"sha256": "0" * 64}
    elif names:
        entries[data.draw(st.sampled_from(names))] = data.draw(json_values)
    return json_text(manifest).encode("utf-8", "surrogatepass")


INTO = {"study": "study", "new": "new/study", "empty": "empty"}
"""Where a bundle is imported: the study, a folder not made yet, an empty folder."""


def import_bundle(bundle: dict[str, bytes], template: Template, into: str = "study") -> Command:
    """Import ``bundle`` (the template's, changed) into one of INTO."""
    return Command(
        args=("import", f"{WORK}/bundle", "--study", f"{WORK}/{INTO[into]}"),
        files=tuple(
            (f"bundle/{name}", raw)
            for name, raw in sorted(bundle.items())
            if template.bundle.get(name) != raw
        ),
        removed=tuple(f"bundle/{name}" for name in sorted(template.bundle) if name not in bundle),
        folders=("empty",) if into == "empty" else (),
        target=INTO[into].split("/")[0],
    )


def bundle_case(data: st.DataObject, template: Template) -> Command:
    """A bundle, damaged one to three ways (its rows, bytes, study file or manifest; a file
    deleted or one added), usually re-signed, imported into the study, a new or an empty
    folder."""
    bundle = dict(template.bundle)
    for _ in range(data.draw(st.integers(1, 3))):
        action = data.draw(
            st.sampled_from(
                ["rows", "rows", "rows", "bytes", "study", "manifest", "delete", "unlisted"]
            )
        )
        name = data.draw(st.sampled_from(sorted(bundle) or ["manifest.json"]))
        if action == "unlisted":
            bundle[data.draw(st.sampled_from(["notes.txt", "extra.jsonl", ".hidden"]))] = b"{}\n"
        elif name not in bundle:
            continue
        elif action == "rows" and name.endswith(".jsonl"):
            bundle[name] = _damage_rows(data, bundle[name])
        elif action == "study" and STUDY_FILE in bundle:
            text = bundle[STUDY_FILE].decode("utf-8", "replace")  # damaged bytes, damaged more
            bundle[STUDY_FILE] = study_file(data, text)
        elif action == "manifest" and "manifest.json" in bundle:
            bundle["manifest.json"] = _damage_manifest(data, bundle["manifest.json"])
        elif action == "delete":
            del bundle[name]
        else:
            bundle[name] = damaged(data, bundle[name], most=3)
    if data.draw(st.integers(0, 3)):
        _resign(bundle)
    return import_bundle(bundle, template, data.draw(st.sampled_from(sorted(INTO))))


# -- capability index files ---------------------------------------------------------------------

index_values = st.one_of(
    st.sampled_from(["1", "2.5", "-3", "0", "1e308", "-1e308", "1.7e308", "1e-320", "1e309"]),
    st.sampled_from(["nan", "inf", "", " 7 ", "9" * 400, "-" + "9" * 308, "1,5", "0x10", "٣"]),
    st.floats().map(repr),
    st.integers().map(str),
)
"""An index value: a number, one at the edge of what a float holds, or nearly a number."""

HEADERS = ["system,value", "System , Value", "value,system", "system,value,note", "system"]
HEADERS += ["system,system,value", ""]


def index_file(data: st.DataObject) -> bytes:
    """An index of every system with a value that is a number or nearly (half the time), or
    a header and rows each of which may be hostile."""
    if data.draw(st.booleans()):
        lines = ["system,value"]
        lines += [f"{s},{data.draw(index_values)}" for s in data.draw(st.permutations(SYSTEMS))]
        return "\n".join(lines).encode("utf-8")
    header = data.draw(st.sampled_from(HEADERS) | texts)
    rows = []
    for _ in range(data.draw(st.integers(0, 5))):
        system = data.draw(st.sampled_from([*SYSTEMS, HUMAN, "m9"]) | texts)
        cells = [system, data.draw(index_values | texts)]
        if data.draw(st.integers(0, 9)) == 0:
            cells.append(data.draw(texts))
        rows.append(",".join(_quoted(c) for c in cells))
    return "\n".join([header, *rows]).encode("utf-8", "surrogatepass")


def report_with_index(raw: bytes) -> Command:
    return Command(
        args=("report", "--index", f"{WORK}/input-index.csv", "--study", STUDY),
        files=(("input-index.csv", raw),),
    )


def index_case(data: st.DataObject, template: Template) -> Command:
    """A capability index read by `heart report` (which writes the report when the index is
    good), named by --index or by the study file (which may name a file no one can open)."""
    raw = damaged(data, index_file(data))
    if data.draw(st.booleans()):
        return report_with_index(raw)
    settings = yaml.safe_load(template.settings_text)
    settings.setdefault("ratings", {})["capability_index"] = either(
        data, "input-index.csv", st.sampled_from(PATHS), odds=4
    )
    study = yaml.safe_dump(settings, allow_unicode=True).encode("utf-8", "surrogatepass")
    return Command(
        args=("report", "--study", STUDY),
        files=(("study/input-index.csv", raw), (f"study/{STUDY_FILE}", study)),
    )


# -- the web app's forms and links -----------------------------------------------------------

URL_CHARS = 2000
"""The longest value put in a link (clients refuse longer links before they reach the app)."""


def _q(value: str) -> str:
    """``value`` percent-encoded for a link or a form, lone surrogates as their bytes."""
    return quote(value.encode("utf-8", "surrogatepass"), safe="")


def form(fields: list[tuple[str, str]]) -> bytes:
    """A urlencoded body; the values ``{task}`` and ``{csrf}`` are left for the page's own."""
    keep = ("{task}", "{csrf}")
    return "&".join(f"{_q(k)}={v if v in keep else _q(v)}" for k, v in fields).encode("ascii")


def _answer(data: st.DataObject, kind: str) -> list[tuple[str, str]]:
    """The form a careful rater sends for ``kind``, with up to three changes: a value made
    hostile, a field left out or sent twice, a field the form does not have; now and then
    more fields than any form has."""
    names = load_taxonomy().names
    fields = [("task", "{task}"), ("csrf", "{csrf}")]
    if kind in ("write", "words"):
        fields.append(("text", "That sounds so hard; I'm glad you told me about it."))
    elif kind == "judge":
        fields += [
            ("choice", data.draw(st.sampled_from(list(CHOICES)))),
            ("rationale", "It listens first."),
            ("checklist", "length"),
            ("checklist", "format"),
            ("checklist", "position"),
        ]
    else:
        picked = data.draw(st.lists(st.sampled_from(names), min_size=1, max_size=3))
        fields += [("strategies", name) for name in picked]
    for _ in range(data.draw(st.integers(0, 3))):
        at = data.draw(st.integers(0, len(fields) - 1)) if fields else 0
        how = data.draw(st.sampled_from(["value", "value", "drop", "twice", "extra"]))
        if how == "value" and fields:
            fields[at] = (fields[at][0], data.draw(form_texts))
        elif how == "drop" and fields:
            del fields[at]
        elif how == "twice" and fields:
            fields.insert(at, (fields[at][0], data.draw(form_texts)))
        else:
            name = either(data, data.draw(st.sampled_from(["checklist", "strategies"])), texts)
            fields.append((name, data.draw(form_texts)))
    if data.draw(st.integers(0, 19)) == 0:
        fields += [("x", "y")] * (MAX_FIELDS + 1)
    return fields


form_texts = texts.map(lambda t: t[:3000])
"""Hostile values for a form field, within the size a form takes (a body too large for any
form is sent now and then on its own)."""

CONTENT_TYPES = [
    f"{URLENCODED}; charset=latin-1",
    "multipart/form-data; boundary=x",
    "text/plain",
    "",
]


def web_case(data: st.DataObject, template: Template) -> Request:
    """One hostile request: a task form (write, judge, label, the word count) from a signed-in
    rater, or an entry, admin or download link."""
    del template
    kind = data.draw(
        st.sampled_from(
            ["write", "judge", "label", "words", "prolific", "invite", "admin", "export"]
        )
    )
    cookie = data.draw(st.sampled_from(WORDS[:8])) if data.draw(st.integers(0, 19)) == 0 else None
    short = texts.map(lambda t: t[:URL_CHARS])
    if kind in ("write", "judge", "label", "words"):
        body = form(_answer(data, kind))
        if data.draw(st.integers(0, 4)) == 0:
            body = damaged(data, body)
        if data.draw(st.integers(0, 29)) == 0:
            body += b"&text=" + b"a" * MAX_FORM_BYTES
        content_type = either(data, URLENCODED, st.sampled_from(CONTENT_TYPES), odds=8)
        return Request(kind, body=body, content_type=content_type, cookie=cookie)
    if kind == "prolific":
        names = ["PROLIFIC_PID", "STUDY_ID", "SESSION_ID"]
        params = [(n, either(data, "p-123", short)) for n in names if data.draw(st.integers(0, 4))]
        url = "/prolific?" + "&".join(f"{_q(k)}={_q(v)}" for k, v in params)
    elif kind == "invite":
        url = "/invite/" + either(data, "{token}", short.map(_q))
    elif kind == "admin":
        url = "/admin?token=" + _q(either(data, ADMIN_TOKEN, short))
    else:
        table = either(
            data, data.draw(st.sampled_from(["completions", "judgments", "labels"])), short
        )
        fmt = either(data, data.draw(st.sampled_from(["csv", "jsonl"])), short)
        url = f"/admin/export/{_q(table)}.{_q(fmt)}"
    return Request(kind, url=url, cookie=cookie)


# -- every reader -----------------------------------------------------------------------------


Draw = Callable[[st.DataObject, Template], Command | Request]

READERS: dict[str, Draw] = {
    "study": study_case,
    "bundle": bundle_case,
    "completions": table_case("completions"),
    "judgments": table_case("judgments"),
    "labels": table_case("labels"),
    "index": index_case,
    "web": web_case,
}
"""Every reader of outside data, and how to draw a case of it."""


def _settings(template: Template, **changes: Any) -> bytes:
    """The fuller study file with ``changes``."""
    settings = yaml.safe_load(template.study_text)
    settings.update(changes)
    return yaml.safe_dump(settings, allow_unicode=True, sort_keys=False).encode()


def _plain(template: Template, **changes: Any) -> bytes:
    """The study's own study file with ``changes``."""
    settings = yaml.safe_load(template.settings_text)
    settings.update(changes)
    return yaml.safe_dump(settings, allow_unicode=True).encode()


def _bundle_with(template: Template, name: str, change: Callable[[Any], Any]) -> dict[str, bytes]:
    """The template's bundle with the first row of ``name`` changed, re-signed."""
    bundle = dict(template.bundle)
    lines = bundle[name].decode().split("\n")
    lines[0] = json.dumps(change(json.loads(lines[0])))
    bundle[name] = "\n".join(lines).encode()
    _resign(bundle)
    return bundle


def _bundle_study(template: Template, text: str) -> dict[str, bytes]:
    bundle = dict(template.bundle)
    bundle[STUDY_FILE] = text.encode()
    _resign(bundle)
    return bundle


def known(template: Template) -> dict[str, Command | Request]:
    """Hostile cases written by hand, by reader and what they try: every one must pass."""
    first = template.completions[0]
    own_study = template.bundle[STUDY_FILE].decode()
    return {
        "study-markup-in-a-refused-value": Command(
            ("raters", "list", "--study", STUDY),
            files=((f"study/{STUDY_FILE}", _settings(template, seed="[/red]")),),
        ),
        "study-an-alias-of-itself": Command(
            ("check", "--study", STUDY),
            read_only=True,
            files=((f"study/{STUDY_FILE}", template.study_text.encode() + b"extra: &a [*a]\n"),),
        ),
        "study-check-names-a-new-store": Command(
            ("check", "--study", STUDY),
            read_only=True,
            files=((f"study/{STUDY_FILE}", _settings(template, store=STORES[0])),),
        ),
        "study-check-paths-too-long": Command(
            ("check", "--study", STUDY),
            read_only=True,
            files=(
                (
                    f"study/{STUDY_FILE}",
                    _settings(template, items={"esconv": PATHS[0]}, store=f"sqlite:///{PATHS[1]}"),
                ),
            ),
        ),
        "study-store-path-with-a-nul": Command(
            ("raters", "list", "--study", STUDY),
            files=((f"study/{STUDY_FILE}", _settings(template, store="sqlite:///a\x00b.db")),),
        ),
        "bundle-store-url-elsewhere": import_bundle(
            _bundle_study(template, own_study + f"store: {STORES[0]}\n"), template, "new"
        ),
        "bundle-refused-into-a-new-folder": import_bundle(
            _bundle_with(template, "items.jsonl", lambda r: {**r, "subset": "nonsense"}),
            template,
            "new",
        ),
        "bundle-markup-in-a-refused-value": import_bundle(
            _bundle_with(template, "completions.jsonl", lambda r: {**r, "status": "[/red]"}),
            template,
        ),
        "completions-markup-in-a-refused-value": import_table(
            "completions", "input.csv", b"item_id,system,text\ni0,[/red],hello\n"
        ),
        "judgments-markup-in-a-refused-value": import_table(
            "judgments",
            "input.csv",
            b"item_id,judge,a_system,b_system,winner\nX,j,a,b,[/red]\n",
        ),
        "labels-markup-in-a-refused-value": import_table(
            "labels",
            "input.jsonl",
            json.dumps({"completion_id": first, "rater": "q1", "strategies": "[/red]"}).encode(),
        ),
        "index-markup-in-a-refused-value": report_with_index(b"system,value\n[/red],1\n"),
        "index-named-with-a-nul-by-the-study-file": Command(
            ("report", "--study", STUDY),
            files=(
                (f"study/{STUDY_FILE}", _plain(template, ratings={"capability_index": "a\x00b"})),
            ),
        ),
        "index-values-at-the-edge-of-floats": report_with_index(
            b"system,value\nm1,1e308\nm2,-1e308\nm3,1e308\n"
        ),
        "web-control-characters-in-a-reason": Request(
            "judge",
            body=form(
                [
                    ("task", "{task}"),
                    ("csrf", "{csrf}"),
                    ("choice", "A+"),
                    ("rationale", "fine\x00\u202e"),
                    ("checklist", "length"),
                ]
            ),
        ),
        "web-markup-in-a-prolific-id": Request(
            "prolific", url="/prolific?PROLIFIC_PID=%5B%2Fred%5D&STUDY_ID=s&SESSION_ID=x"
        ),
    }
