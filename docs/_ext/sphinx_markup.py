"""A griffe extension for the API reference: the docstrings' Sphinx markup, rendered as Markdown.

The package's Google-style docstrings use a few reStructuredText forms (``.. code-block:: python`` and roles such
as ``:meth:`name```), which read well in an editor and in ``help()``; mkdocstrings renders Markdown, so here they
become fenced code blocks and code spans. The docstrings themselves are left as they are.
"""

from __future__ import annotations

import re
from typing import Any

import griffe

ROLE = re.compile(r":(?:meth|func|class|data|attr|mod|exc|obj):`(~?)([^`]+)`")
DIRECTIVE = re.compile(r"^(\s*)\.\. code-block::\s*(\w*)\s*$")


def _role(match: re.Match[str]) -> str:
    target = match.group(2)
    return f"`{target.rsplit('.', 1)[-1] if match.group(1) else target}`"


def _fences(text: str) -> str:
    lines = text.split("\n")
    out: list[str] = []
    i = 0
    while i < len(lines):
        found = DIRECTIVE.match(lines[i])
        if not found:
            out.append(lines[i])
            i += 1
            continue
        indent, lang = found.group(1), found.group(2) or "text"
        i += 1
        body: list[str] = []
        while i < len(lines) and (not lines[i].strip() or len(lines[i]) - len(lines[i].lstrip()) > len(indent)):
            body.append(lines[i])
            i += 1
        while body and not body[-1].strip():
            body.pop()
        while body and not body[0].strip():
            body.pop(0)
        cut = min((len(b) - len(b.lstrip()) for b in body if b.strip()), default=0)
        out.append(f"{indent}```{lang}")
        out.extend(f"{indent}{b[cut:]}" if b.strip() else "" for b in body)
        out.append(f"{indent}```")
        out.append("")
    return "\n".join(out)


class SphinxMarkup(griffe.Extension):
    """Rewrite code-block directives and Sphinx roles of every docstring that griffe loads."""

    def on_instance(self, *, obj: griffe.Object, **kwargs: Any) -> None:  # noqa: ARG002 - griffe's hook signature
        """Rewrite ``obj``'s docstring, if it has one."""
        if obj.docstring is not None:
            obj.docstring.value = ROLE.sub(_role, _fences(obj.docstring.value))


class BoundMethods(griffe.Extension):
    """Show the methods a class binds from functions as methods.

    griffe reads ``add_note = admin.add_note`` (a module function bound as a method) and ``aforget =
    in_thread(forget)`` (an async twin made by ``memory._threads.in_thread``) as attributes without a docstring.
    The first becomes an alias of its function; the second an async method with its function's signature.
    """

    def on_package(self, *, pkg: griffe.Module, **kwargs: Any) -> None:  # noqa: ARG002 - griffe's hook signature
        """Replace every bound-function attribute of every class in the package with an alias of the function."""
        for cls in _classes(pkg):
            for name, member in list(cls.members.items()):
                if member.is_alias or not member.is_attribute:
                    continue
                value = member.value
                twin = isinstance(value, griffe.ExprCall) and str(value.function) == "in_thread"
                bound = value.arguments[0] if twin else value  # type: ignore[union-attr]
                if not isinstance(bound, griffe.ExprAttribute | griffe.ExprName):
                    continue
                try:
                    function = pkg.modules_collection.get_member(bound.canonical_path)
                except KeyError:
                    continue
                if not function.is_function:
                    continue
                if not twin:
                    cls.set_member(name, griffe.Alias(name, function, parent=cls))
                    continue
                method = griffe.Function(
                    name,
                    parameters=function.parameters,
                    returns=function.returns,
                    docstring=griffe.Docstring(f"Async `{function.name}`."),
                    lineno=member.lineno,
                    endlineno=member.endlineno,
                )
                method.labels.add("async")
                cls.set_member(name, method)
                method.docstring.parent = method  # type: ignore[union-attr]


def _classes(module: griffe.Module) -> list[griffe.Class]:
    found: list[griffe.Class] = []
    for member in module.members.values():
        if member.is_alias:
            continue
        if member.is_module:
            found += _classes(member)  # type: ignore[arg-type]
        elif member.is_class:
            found.append(member)  # type: ignore[arg-type]
    return found
