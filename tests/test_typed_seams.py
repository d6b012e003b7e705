"""The engine's and the server's public signatures say what they take and give: no `Any` in one.

mlx-lm's models and caches are untyped; the engine names what it calls on them (engine/model_types.py)
and the JSON it reads (engine/json_types.py). Private helpers may still hold an `Any`."""

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("specchat/engine", "specchat/server")


def mentions_any(node: ast.AST | None) -> bool:
    return node is not None and any(
        (isinstance(n, ast.Name) and n.id == "Any")
        or (isinstance(n, ast.Attribute) and n.attr == "Any")
        or (isinstance(n, ast.Constant) and isinstance(n.value, str) and "Any" in n.value)
        for n in ast.walk(node)
    )


def public(name: str) -> bool:
    return not name.startswith("_") or (name.startswith("__") and name.endswith("__"))


def signature_hits(func: ast.FunctionDef | ast.AsyncFunctionDef, where: str) -> list[str]:
    args = func.args
    params = [*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg]
    hits = [f"{where}{func.name}({p.arg})" for p in params if p is not None and mentions_any(p.annotation)]
    hits += [f"{where}{func.name} -> return"] if mentions_any(func.returns) else []
    hits += [
        f"{where}self.{node.target.attr}"
        for node in ast.walk(func)
        if isinstance(node, ast.AnnAssign)
        and isinstance(node.target, ast.Attribute)
        and public(node.target.attr)
        and mentions_any(node.annotation)
    ]
    return hits


def public_any(body: list[ast.stmt], where: str, top: bool = True) -> list[str]:
    """Every public function's parameters and return, public class attributes and aliases that mention Any."""
    hits: list[str] = []
    for node in body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and public(node.name):
            hits += signature_hits(node, where)
        elif isinstance(node, ast.ClassDef) and public(node.name):
            hits += public_any(node.body, f"{where}{node.name}.", top=False)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and public(node.target.id):
            hits += [f"{where}{node.target.id}"] if mentions_any(node.annotation) else []
        elif isinstance(node, ast.Assign) and top and mentions_any(node.value):
            names = [t.id for t in node.targets if isinstance(t, ast.Name) and public(t.id) and t.id[:1].isupper()]
            hits += [f"{where}{name} (alias)" for name in names]
    return hits


def test_no_public_signature_in_engine_or_server_mentions_any():
    hits = [
        hit
        for package in PACKAGES
        for path in sorted((ROOT / package).rglob("*.py"))
        for hit in public_any(ast.parse(path.read_text(encoding="utf-8")).body, f"{path.relative_to(ROOT)}: ")
    ]
    assert hits == []


def test_the_check_sees_an_any_where_there_is_one():
    source = (
        "from typing import Any\n"
        "Alias = dict[str, Any]\n"
        "def f(x: Any) -> int: ...\n"
        "def _private(x: Any) -> Any: ...\n"
        "class C:\n"
        "    field: 'Any'\n"
        "    def __init__(self) -> None:\n"
        "        self.y: list[Any] = []\n"
        "    def g(self) -> Any: ...\n"
    )
    assert public_any(ast.parse(source).body, "m: ") == [
        "m: Alias (alias)",
        "m: f(x)",
        "m: C.field",
        "m: C.self.y",
        "m: C.g -> return",
    ]
