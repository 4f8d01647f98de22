"""Write the REST request bodies from the library's verb signatures.

    python scripts/gen_models.py          # rewrite the server's models_generated.py and
                                          # responses_generated.py
    python scripts/gen_models.py --check  # exit 1 if either is stale (make lint)

One pydantic model per route with a JSON body (``memorybank.surface.BODIES``): a field
per argument of the verb, under the library's name, with the library's type (as JSON
takes it: a ``Sequence`` is a list, a ``Mapping`` an object, ``Unset`` left out), the
library's default, and the docstring's sentence on it as its description. Required
exactly when the library requires it (``Body.required``). A default of ``UNSET`` has no
default in the schema: a field left out is not passed, so the library's own default
applies; every field does that (``Arguments.arguments``).

One pydantic model per response made from a library record
(``memorybank.server.responses.RESPONSES``), written to ``responses_generated.py``: the
record's fields in its order, with its types as JSON gives them (a nested record is its
own response), read from the record by attribute (``Read``).
"""

from __future__ import annotations

import argparse
import ast
import collections.abc
import dataclasses
import importlib
import inspect
import re
import subprocess
import sys
import textwrap
import types
import typing
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

if TYPE_CHECKING:
    from memorybank.server.responses import Response

ROOT = Path(__file__).resolve().parent.parent
SERVER = ROOT / "src" / "memorybank" / "server"
TARGET = SERVER / "models_generated.py"
RESPONSES_TARGET = SERVER / "responses_generated.py"

_SCALARS = {str: "str", int: "int", float: "float", bool: "bool", datetime: "Timestamp"}
_SEQUENCES = (collections.abc.Sequence, collections.abc.Iterable, list, tuple)
_MAPPINGS = (collections.abc.Mapping, dict)


def _type_checking_names(module: types.ModuleType) -> dict[str, Any]:
    """The names a module imports under ``if TYPE_CHECKING:`` (its annotations use them)."""
    names: dict[str, Any] = {}
    tree = ast.parse(inspect.getsource(module))
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and ast.unparse(node.test).endswith("TYPE_CHECKING"):
            for statement in node.body:
                if isinstance(statement, ast.ImportFrom) and statement.module:
                    found = importlib.import_module(statement.module)
                    for alias in statement.names:
                        names[alias.asname or alias.name] = getattr(found, alias.name)
    return names


def _hints(function: Any) -> dict[str, Any]:
    module = sys.modules[function.__module__]
    hints: dict[str, Any] = typing.get_type_hints(function, localns=_type_checking_names(module))
    return hints


class Renderer:
    """Library types as the source of pydantic field types; the dataclasses met on the
    way (``GraphContextOptions``) become models of their own."""

    scalars: ClassVar[dict[Any, str]] = _SCALARS

    def __init__(self) -> None:
        self.nested: dict[type, str] = {}

    def record(self, hint: type) -> str:
        """The model of a dataclass met in a type: a request body's nested one."""
        return self.nested.setdefault(hint, f"{hint.__name__}In")

    def render(self, hint: Any) -> str:
        from memorybank.records import Message
        from memorybank.stores.contract.types import Unset

        if hint is type(None):
            return "None"
        if hint is Any or hint is object:
            return "Any"
        if hint in self.scalars:
            return self.scalars[hint]
        if isinstance(hint, type) and dataclasses.is_dataclass(hint):
            return self.record(hint)
        origin, args = typing.get_origin(hint), typing.get_args(hint)
        if origin is typing.Literal:
            return f"Literal[{', '.join(repr(a) for a in args)}]"
        if origin in (typing.Union, types.UnionType):
            if Message in args:  # a message, as a model or as its dict
                return "MessageIn"
            options = [a for a in args if a is not Unset]
            if any(isinstance(a, type) and dataclasses.is_dataclass(a) for a in options):
                # the dataclass's model is the JSON form of it and of its mapping
                options = [a for a in options if typing.get_origin(a) not in _MAPPINGS]
            rendered = dict.fromkeys(self.render(a) for a in options)
            return " | ".join(rendered)
        if origin in _SEQUENCES:
            return f"list[{self.render(args[0])}]"
        if origin in _MAPPINGS:
            return f"dict[{self.render(args[0])}, {self.render(args[1])}]"
        raise TypeError(f"no JSON form for {hint!r}")


def _default(value: Any) -> str:
    if isinstance(value, tuple):
        value = list(value)
    return repr(value)


def _describe(text: str | None) -> str:
    """``text`` as a (wrapped) string literal argument."""
    from memorybank.surface import plain

    if not text:
        return ""
    text = plain(text)
    if len(text) <= 75:  # fits on the field's line
        return f"description={text!r}"
    lines = textwrap.wrap(text, 80, drop_whitespace=False)
    return f"description=({' '.join(repr(line) for line in lines)})"


def _field(name: str, annotation: str, default: str | None, description: str | None) -> str:
    """One field's line: ``default`` ``None`` is required, ``"UNSET"`` left out,
    ``"FACTORY <name>"`` made by ``<name>()``."""
    arguments = []
    if default == "UNSET":
        arguments.append("default_factory=unset")
    elif default is not None and default.startswith("FACTORY "):
        arguments.append(f"default_factory={default.split()[1]}")
    elif default is not None:
        arguments.append(f"default={default}")
    if description:
        arguments.append(_describe(description))
    if not arguments:
        return f"    {name}: {annotation}"
    if default is not None and arguments == [f"default={default}"] and default[0] not in "[{":
        return f"    {name}: {annotation} = {default}"
    return f"    {name}: {annotation} = Field({', '.join(arguments)})"


def _docstring(*paragraphs: str) -> str:
    from memorybank.surface import plain

    wrapped = [
        textwrap.fill(plain(p), 88, initial_indent="    ", subsequent_indent="    ")
        for p in paragraphs
    ]
    text = "\n\n".join(wrapped).strip()
    return f'    """{text}"""'


def _model(name: str, doc: tuple[str, ...], fields: list[str]) -> str:
    return "\n".join([f"class {name}(Arguments):", _docstring(*doc), "", *fields])


def source() -> str:
    """The generated module, formatted as ``ruff format`` leaves it."""
    from memorybank.stores.contract.types import UNSET
    from memorybank.surface import BODIES, Body

    renderer = Renderer()
    models = []
    for body in BODIES:
        verb = body.declared
        hints = _hints(verb.callable)
        fields = []
        for argument in body.fields():
            annotation = renderer.render(hints[argument.name])
            if Body.required(argument):
                default = None
            elif argument.default is UNSET:
                default = "UNSET"
            else:
                default = _default(argument.default)
            # a sentence naming the argument that is the summary says nothing more of it
            said = None if argument.description == verb.summary else argument.description
            fields.append(_field(argument.name, annotation, default, said))
        doc = (verb.summary, f"The arguments of ``{verb.name}`` ({body.route}).")
        models.append(_model(body.model, doc, fields))
    nested = []
    for dataclass, name in renderer.nested.items():
        hints = _hints(dataclass)
        fields = [
            _field(f.name, renderer.render(hints[f.name]), _default(f.default), None)
            for f in dataclasses.fields(dataclass)
        ]
        nested.append(
            _model(name, tuple((inspect.getdoc(dataclass) or name).split("\n\n")), fields)
        )
    text = "\n\n\n".join([*nested, *models])
    shared = ["Arguments", "MessageIn", *(["Timestamp"] if "Timestamp" in text else []), "unset"]
    return _module(
        "memorybank.surface.BODIES",
        "The REST request bodies, generated from the library's verb signatures.",
        text,
        shared,
        [*renderer.nested.values(), *(body.model for body in BODIES)],
    )


def _module(source: str, doc: str, text: str, shared: list[str], names: list[str]) -> str:
    """A generated module of models ``text`` (``names``), formatted as ``ruff format``
    leaves it: its header, its imports (``shared``: from ``memorybank.server.arguments``)."""
    imports = ["from __future__ import annotations", ""]
    if re.search(r"(: |\[|\| )datetime\b", text):  # a field's type, not a word of a text
        imports.append("from datetime import datetime")
    used = [name for name in ("Any", "Literal") if f"{name}[" in text or f": {name}" in text]
    if used:
        imports.append(f"from typing import {', '.join(used)}")
    imports += ["", "from pydantic import Field", ""]
    imports.append(f"from memorybank.server.arguments import {', '.join(shared)}")
    exported = "__all__ = [" + ", ".join(f'"{name}"' for name in sorted(names)) + "]"
    head = f"# GENERATED by scripts/gen_models.py from {source}: do not edit.\n" + f'"""{doc}"""'
    raw = "\n".join([head, "", *imports, "", exported, "", "", text, ""])
    return _formatted(raw)


class ResponseRenderer(Renderer):
    """Record types as response field types: a nested record is its own response."""

    scalars: ClassVar[dict[Any, str]] = {**_SCALARS, datetime: "datetime"}

    def __init__(self, names: dict[type, str]) -> None:
        super().__init__()
        self.names = names

    def record(self, hint: type) -> str:
        return self.names[hint]


def _attribute_hint(record: type, name: str) -> Any:
    """The type of a record's field, or of the property ``name``."""
    attribute = getattr(record, name, None)
    if isinstance(attribute, property):
        return _hints(attribute.fget)["return"]
    return _hints(record)[name]


def _record_default(record: type, name: str) -> str:
    """A field's default on the record as ``_field`` takes it (``None`` when it has none)."""
    found = {f.name: f for f in dataclasses.fields(record)}.get(name)
    if found is not None and found.default_factory is not dataclasses.MISSING:
        factory: Any = found.default_factory
        return f"FACTORY {factory.__name__}"
    if found is None or found.default is dataclasses.MISSING:
        return "None"
    return _default(found.default)


def _response_field(response: Response, name: str, renderer: ResponseRenderer) -> str:
    hint = response.types.get(name) or renderer.render(_attribute_hint(response.record, name))
    default = None
    if name in response.optional:
        default = _record_default(response.record, name)
    elif name in response.defaults:
        default = _default(response.defaults[name])
    return _field(name, hint, default, response.described.get(name))


def _described(text: str) -> str:
    """A model's docstring, its lines as given."""
    lines = inspect.cleandoc(text).splitlines()
    return '    """' + "\n    ".join(lines) + '"""'


def responses_source() -> str:
    """The generated response module, formatted as ``ruff format`` leaves it."""
    if "memorybank.server" not in sys.modules:
        # the package's __init__ builds the app, whose routes import the module written here
        package = types.ModuleType("memorybank.server")
        package.__path__ = [str(SERVER)]
        sys.modules["memorybank.server"] = package
    from memorybank.server.responses import RESPONSES

    renderer = ResponseRenderer({r.record: r.name for r in RESPONSES})
    models = []
    for response in RESPONSES:
        head = [f"class {response.name}(Read):"]
        if response.doc:
            head += [_described(response.doc), ""]
        fields = [_response_field(response, name, renderer) for name in response.fields()]
        models.append("\n".join([*head, *fields]))
    return _module(
        "memorybank.server.responses",
        "The REST response bodies, generated from the library's records.",
        "\n\n\n".join(models),
        ["ErrorText", "Read"],
        [r.name for r in RESPONSES],
    )


def _formatted(text: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "ruff", "format", "--stdin-filename", str(TARGET), "-"],
        input=text,
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
    )
    return done.stdout


def main(argv: list[str] | None = None) -> int:
    """Write (or with ``--check`` compare) the generated modules; the exit status."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--check", action="store_true", help="fail if the module is stale")
    args = parser.parse_args(argv)
    stale = 0
    for target, text in ((TARGET, source()), (RESPONSES_TARGET, responses_source())):
        current = target.read_text(encoding="utf-8") if target.exists() else ""
        if current == text:
            continue
        if args.check:
            print(f"{target.relative_to(ROOT)} is stale: run python scripts/gen_models.py")
            stale = 1
        else:
            target.write_text(text, encoding="utf-8")
            print(f"wrote {target.relative_to(ROOT)}")
    return stale


if __name__ == "__main__":
    sys.exit(main())
