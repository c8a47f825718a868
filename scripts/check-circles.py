#!/usr/bin/env python3
"""No import circles between the concepts of a crate.

Reads every non-test file reached from the crate root, resolves the paths it names
(`use crate::…`, `use super::…`, `crate::x::y` and `super::x` in code, a child module's
`child::x`), and draws an edge from the file's node to the node that defines the name.
An inherent `impl T` in another node's file is an edge too, from T's node to that file:
whoever holds a `T` may call those methods, so the type's home depends on them.

Nodes (core): each top-level file, each top-level folder, except that the files inside
the folders in EXPANDED are nodes of their own (a folder inside them is one node).
src-tauri: the same, with no folder opened (`notify/` is one node). The crate root's own
edges are left out: it is the composition root that names every part (in src-tauri, the
command list and `AppState`).

Test code is left out: `#[cfg(test)]` items (and the files they name), files named
`tests.rs` or `*_tests.rs`. A `pub use` in a module of its own descendants' items is a
facade, not an edge, unless the module itself uses the name.

Exit 1 and print every circle (strongly connected set of nodes) with one shortest loop
and every file -> file edge inside it, with the names that tie them.

  scripts/check-circles.py              # vigil-core and src-tauri
  scripts/check-circles.py --self-test  # plants a circle in a temp tree, expects failure
"""

import os
import re
import sys
import tempfile
from collections import defaultdict, deque

ROOTS = [
    # (label, crate src dir, root file, expanded folders or "*" for every file a node)
    ("vigil-core", "crates/vigil-core/src", "lib.rs", {"routines", "session", "exec"}),
    ("src-tauri", "src-tauri/src", "lib.rs", set()),
]

KEYWORDS_PATH = {"crate", "super", "self"}


# ---------------------------------------------------------------- lexing


def strip(text):
    """Comments removed, string contents replaced by `"S<n>"` (kept in a table)."""
    out, strings, i, n = [], [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif text.startswith("/*", i):
            depth, i = 1, i + 2
            while i < n and depth:
                if text.startswith("/*", i):
                    depth, i = depth + 1, i + 2
                elif text.startswith("*/", i):
                    depth, i = depth - 1, i + 2
                else:
                    out.append("\n" if text[i] == "\n" else "")
                    i += 1
        elif c == "r" and re.match(r'r#*"', text[i:i + 40]) and not re.match(r"\w", text[i - 1:i] or " "):
            m = re.match(r'r(#*)"', text[i:])
            end = '"' + m.group(1)
            j = text.find(end, i + len(m.group(0)))
            j = n if j < 0 else j
            strings.append(text[i + len(m.group(0)):j])
            out.append('"S%d"' % (len(strings) - 1) + "\n" * text[i:j].count("\n"))
            i = j + len(end)
        elif c == '"' or (c == "b" and text[i + 1:i + 2] == '"' and not re.match(r"\w", text[i - 1:i] or " ")):
            i += 1 if c == '"' else 2
            j = i
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            strings.append(text[i:j])
            out.append('"S%d"' % (len(strings) - 1) + "\n" * text[i:j].count("\n"))
            i = j + 1
        elif c == "'":
            m = re.match(r"'(\\.[^']*|[^\\'])'", text[i:])
            if m:
                out.append("' '")
                i += len(m.group(0))
            else:
                out.append(c)
                i += 1
        else:
            out.append(c)
            i += 1
    return "".join(out), strings


TOKEN = re.compile(r"\s*(::|[A-Za-z_][A-Za-z0-9_]*|\"S\d+\"|'|\S)")


def tokens(code):
    """(token, line) pairs."""
    toks, line, pos = [], 1, 0
    for m in TOKEN.finditer(code):
        line += code.count("\n", pos, m.start(1))
        pos = m.start(1)
        toks.append((m.group(1), line))
    return toks


def skip_item(toks, i):
    """Index just past the item starting at toks[i] (after its attributes)."""
    while i < len(toks) and toks[i][0] == "#":
        i = skip_group(toks, i + 1)
    depth = 0
    while i < len(toks):
        t = toks[i][0]
        if t in "([":
            depth += 1
        elif t in ")]":
            depth -= 1
        elif t == ";" and depth == 0:
            return i + 1
        elif t == "{" and depth == 0:
            return skip_group(toks, i)
        i += 1
    return i


def skip_group(toks, i):
    """toks[i] opens a group; index just past its close."""
    pairs = {"(": ")", "[": "]", "{": "}"}
    close, depth = pairs[toks[i][0]], 0
    opener = toks[i][0]
    while i < len(toks):
        if toks[i][0] == opener:
            depth += 1
        elif toks[i][0] == close:
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    return i


def attr_text(toks, i):
    j = skip_group(toks, i + 1)
    return "".join(t for t, _ in toks[i:j]), j


def drop_test_items(toks):
    """Tokens without `#[cfg(test)]` items."""
    out, i = [], 0
    while i < len(toks):
        if toks[i][0] == "#" and i + 1 < len(toks) and toks[i + 1][0] == "[":
            text, j = attr_text(toks, i)
            if re.fullmatch(r"#\[cfg\((test|all\(test(,.*)?\))\)\]", text):
                i = skip_item(toks, i)
                continue
        out.append(toks[i])
        i += 1
    return out


# ---------------------------------------------------------------- modules


class Module:
    def __init__(self, path, file, inline=False):
        self.path = path  # tuple of names below the crate root
        self.file = file  # relative file holding it
        self.inline = inline
        self.children = {}
        self.imports = {}  # alias -> (absolute path tuple, is_pub, line)
        self.globs = []  # absolute paths of `use x::*`
        self.defs = set()  # names of items defined here


class Crate:
    def __init__(self, src):
        self.src = src
        self.root = None
        self.files = {}  # rel file -> (tokens, strings)
        self.refs = []  # (module, absolute path tuple, line, kind, is_pub_use)
        self.impls = []  # (module, type path tuple, line)
        self.used_idents = defaultdict(set)  # file -> idents used outside `use`
        self.calls = defaultdict(set)  # file -> names called as `.m(` or `::m(`
        self.fn_files = defaultdict(set)  # fn name -> files defining one

    def load(self, root_file):
        self.root = Module((), root_file)
        self.parse_file(self.root, root_file, os.path.dirname(root_file), True)

    def parse_file(self, module, rel, mod_dir, mod_rs):
        name = os.path.basename(rel)
        if name == "tests.rs" or name.endswith("_tests.rs"):
            return
        with open(os.path.join(self.src, rel), encoding="utf-8") as f:
            code, strings = strip(f.read())
        toks = drop_test_items(tokens(code))
        self.files[rel] = toks
        self.walk(toks, 0, len(toks), module, rel, mod_dir if mod_rs else os.path.join(mod_dir, os.path.splitext(name)[0]), strings)

    def walk(self, toks, i, end, module, rel, child_dir, strings):
        path_attr = None
        while i < end:
            t, line = toks[i]
            prev = toks[i - 1][0] if i > 0 else ";"
            if t == "#" and i + 1 < end and toks[i + 1][0] == "[":
                text, j = attr_text(toks, i)
                m = re.fullmatch(r'#\[path="S(\d+)"\]', text)
                if m:
                    path_attr = strings[int(m.group(1))]
                i = j
                continue
            if t == "mod" and i + 2 < end and toks[i + 2][0] in ";{":
                name = toks[i + 1][0]
                if toks[i + 2][0] == ";":
                    if path_attr:
                        frel = os.path.normpath(os.path.join(os.path.dirname(rel), path_attr))
                    elif os.path.exists(os.path.join(self.src, child_dir, name + ".rs")):
                        frel = os.path.join(child_dir, name + ".rs")
                    else:
                        frel = os.path.join(child_dir, name, "mod.rs")
                    child = Module(module.path + (name,), frel)
                    module.children[name] = child
                    module.defs.add(name)
                    is_mod_rs = os.path.basename(frel) == "mod.rs"
                    self.parse_file(child, frel, os.path.dirname(frel), is_mod_rs)
                    i += 3
                else:
                    child = Module(module.path + (name,), rel, inline=True)
                    module.children[name] = child
                    module.defs.add(name)
                    j = skip_group(toks, i + 2)
                    self.walk(toks, i + 3, j - 1, child, rel, os.path.join(child_dir, name), strings)
                    i = j
                path_attr = None
                continue
            path_attr = None
            if t == "use" and prev != "::":
                j = i
                while j < end and toks[j][0] != ";":
                    j += 1
                is_pub = prev == "pub" or (prev == ")" and i >= 4 and toks[i - 4][0] == "pub")
                for path, alias in expand_use([x for x, _ in toks[i + 1:j]]):
                    absolute = self.absolute(module, path)
                    if absolute is None:
                        continue
                    if path[-1] == "*":
                        module.globs.append(absolute[:-1])
                    else:
                        module.imports[alias] = (absolute, is_pub, line)
                    self.refs.append((module, absolute, line, "use", is_pub))
                i = j + 1
                continue
            if t == "fn" and i + 1 < end:
                self.fn_files[toks[i + 1][0]].add(rel)
            if t in ("." , "::") and i + 2 < end and toks[i + 2][0] in ("(", "::"):
                self.calls[rel].add(toks[i + 1][0])
            if t in ("fn", "struct", "enum", "trait", "type", "const", "static", "union") and i + 1 < end:
                module.defs.add(toks[i + 1][0])
            if t == "macro_rules" and i + 2 < end:
                module.defs.add(toks[i + 2][0])
            if t == "impl":
                self.note_impl(toks, i, end, module, line)
            if t not in KEYWORDS_PATH and re.match(r"[A-Za-z_]", t):
                self.used_idents[rel].add(t)
            if prev != "::" and i + 2 < end and toks[i + 1][0] == "::" and re.match(r"[A-Za-z_]", t):
                j, path = i, []
                while j < end and re.match(r"[A-Za-z_]", toks[j][0]):
                    path.append(toks[j][0])
                    if j + 1 < end and toks[j + 1][0] == "::":
                        j += 2
                    else:
                        break
                if t in KEYWORDS_PATH or t in module.children or t in module.imports:
                    absolute = self.absolute(module, path, code=True)
                    if absolute is not None:
                        self.refs.append((module, absolute, line, "path", False))
                for x in path:
                    self.used_idents[rel].add(x)
                if j + 1 < end and toks[j + 1][0] == "(":
                    self.calls[rel].add(path[-1])
                i = j + 1
                continue
            i += 1

    def note_impl(self, toks, i, end, module, line):
        j, depth, seg = i + 1, 0, []
        if j < end and toks[j][0] == "<":
            depth = 0
            while j < end:
                if toks[j][0] == "<":
                    depth += 1
                elif toks[j][0] == ">":
                    depth -= 1
                    if depth == 0:
                        j += 1
                        break
                j += 1
        while j < end and toks[j][0] not in ("{", "<", "for", "where"):
            if toks[j][0] != "::":
                seg.append(toks[j][0])
            j += 1
        k, depth = j, 0
        while k < end and toks[k][0] != "{":
            if toks[k][0] == "<":
                depth += 1
            elif toks[k][0] == ">":
                depth -= 1
            elif toks[k][0] == "for" and depth == 0:
                return  # a trait impl
            k += 1
        if seg and all(re.match(r"[A-Za-z_]\w*$", s) for s in seg):
            absolute = self.absolute(module, seg, code=True) if (seg[0] in KEYWORDS_PATH or seg[0] in module.imports or len(seg) > 1) else None
            if absolute is None and len(seg) == 1:
                absolute = module.path + (seg[0],)
            if absolute is not None:
                close = skip_group(toks, k)
                methods = {toks[x + 1][0] for x in range(k, close - 1) if toks[x][0] == "fn"}
                self.impls.append((module, absolute, line, methods))

    def absolute(self, module, path, code=False):
        """The path from the crate root, or None when it leaves the crate."""
        path = list(path)
        if not path:
            return None
        if path[0] == "crate":
            return tuple(path[1:])
        base = list(module.path)
        if path[0] == "self":
            path = path[1:]
        elif path[0] == "super":
            while path and path[0] == "super":
                base, path = base[:-1], path[1:]
        elif path[0] in module.children:
            pass
        elif code and path[0] in module.imports:
            target = module.imports[path[0]][0]
            return tuple(target) + tuple(path[1:])
        else:
            return None
        return tuple(base) + tuple(path)

    def module_at(self, path):
        m = self.root
        for p in path:
            m = m.children[p]
        return m

    def resolve(self, path, seen=None):
        """(module that defines it, name) for an absolute path."""
        seen = seen or set()
        if path in seen or len(seen) > 20:
            return None
        seen.add(path)
        m, i = self.root, 0
        while i < len(path) and path[i] in m.children:
            m, i = m.children[path[i]], i + 1
        if i == len(path):
            return m, (path[-1] if path else "crate")
        name = path[i]
        if name in m.imports and name not in m.defs:
            return self.resolve(tuple(m.imports[name][0]) + tuple(path[i + 1:]), seen)
        if name not in m.defs:
            for g in m.globs:
                r = self.resolve(tuple(g) + (name,) + tuple(path[i + 1:]), seen)
                if r and (name in r[0].defs or r[0].path == tuple(g) + (name,)):
                    return r
        return m, name


def node_of(rel, expanded):
    parts = rel.split(os.sep)
    if expanded == "*":
        return rel[:-3] if rel.endswith(".rs") else rel
    if len(parts) == 1:
        return parts[0][:-3]
    if parts[0] in expanded:
        if len(parts) == 2:
            return parts[0] + "/" + parts[1][:-3]
        return parts[0] + "/" + parts[1]
    return parts[0]


def expand_use(toks):
    """`a::{b, c::d as e}` -> [(["a","b"], "b"), (["a","c","d"], "e")]."""
    out = []

    def tree(i, prefix):
        path = list(prefix)
        while i < len(toks):
            t = toks[i]
            if t == "{":
                i += 1
                while i < len(toks) and toks[i] != "}":
                    i = tree(i, path)
                    if i < len(toks) and toks[i] == ",":
                        i += 1
                return i + 1
            if t == "::":
                i += 1
                continue
            if t in (",", "}"):
                break
            if t == "as":
                out.append((path, toks[i + 1]))
                return i + 2
            if t == "self" and path:
                out.append((path, path[-1]))
                return i + 1
            path = path + [t]
            i += 1
        if path and path != list(prefix):
            out.append((path, path[-1]))
        return i

    if toks and toks[0] == "::":
        return []
    tree(0, [])
    return out


# ---------------------------------------------------------------- graph


def graph(src, root_file, expanded):
    c = Crate(src)
    c.load(root_file)
    edges = defaultdict(lambda: defaultdict(dict))  # (a, b) -> (fa, fb) -> name -> first line

    def add(a_file, b_file, name, line):
        a, b = node_of(a_file, expanded), node_of(b_file, expanded)
        if a != b and a_file != root_file:  # the root wires every part: its own edges are not ties
            names = edges[(a, b)][(a_file, b_file)]
            names[name] = min(line, names.get(name, line))

    for module, path, line, kind, is_pub in c.refs:
        r = c.resolve(path)
        if r is None:
            continue
        target, name = r
        if kind == "use" and is_pub and target.path[:len(module.path)] == module.path and target is not module:
            if name not in c.used_idents[module.file]:
                continue  # a facade over its own children
        add(module.file, target.file, name, line)
    # Methods in an `impl T` away from T's home: a file that holds a T (names it, or is its
    # home) and calls one of them depends on the file with the impl. Only names no other
    # file defines count, so `new` or `len` never tie two files by accident.
    for module, path, line, methods in c.impls:
        r = c.resolve(path)
        if r is None:
            continue
        home, name = r
        for rel in c.files:
            if rel == module.file or not (rel == home.file or name in c.used_idents[rel]):
                continue
            for m in sorted(methods & c.calls[rel]):
                if c.fn_files[m] == {module.file}:
                    add(rel, module.file, "%s::%s" % (name, m), line)
    return edges


def circles(edges):
    adj = defaultdict(set)
    for a, b in edges:
        adj[a].add(b)
    index, low, stack, on, comps, counter = {}, {}, [], set(), [], [0]
    nodes = sorted(set(adj) | {b for bs in adj.values() for b in bs})

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(adj[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                comps.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in nodes:
        if v not in index:
            visit(v)
    return comps, adj


def shortest_loop(comp, adj):
    start, members = comp[0], set(comp)
    prev, q = {start: None}, deque([start])
    while q:
        v = q.popleft()
        for w in sorted(adj[v]):
            if w == start:
                loop = [v]
                while prev[loop[-1]] is not None:
                    loop.append(prev[loop[-1]])
                return list(reversed(loop)) + [start]
            if w in members and w not in prev:
                prev[w] = v
                q.append(w)
    return comp


def check(label, src, root_file, expanded, out=sys.stdout):
    edges = graph(src, root_file, expanded)
    comps, adj = circles(edges)
    for comp in comps:
        print("CIRCLE in %s: %s" % (label, " -> ".join(shortest_loop(comp, adj))), file=out)
        for (a, b), files in sorted(edges.items()):
            if a in comp and b in comp:
                for (fa, fb), names in sorted(files.items()):
                    tied = ", ".join("%s (line %d)" % (n, names[n]) for n in sorted(names))
                    print("    %s -> %s: %s" % (fa, fb, tied), file=out)
    if not comps:
        print("ok: no import circles in %s (%d edges)" % (label, len(edges)), file=out)
    return len(comps)


def self_test():
    """A tree with no circle passes; the same tree with one planted `use` fails, naming it."""
    import io

    with tempfile.TemporaryDirectory() as d:
        files = {
            "lib.rs": "pub mod a;\npub mod b;\npub mod r;\n",
            "a.rs": "use crate::b::Thing;\npub fn f(_: Thing) {}\n#[cfg(test)]\nmod tests { use crate::r::x; }\n",
            "b.rs": "pub struct Thing;\n// use crate::a::f;\nconst S: &str = \"crate::a::f\";\n",
            "r/mod.rs": "mod x;\nmod y;\nmod z;\npub use x::X;\n",
            "r/x.rs": "pub struct X;\npub fn g() { super::y::h() }\n",
            "r/y.rs": "pub fn h() {}\n",
            "r/z.rs": "use super::x::X;\nimpl X {\n    pub fn more(&self) {}\n}\n",
        }
        for rel, text in files.items():
            os.makedirs(os.path.dirname(os.path.join(d, rel)), exist_ok=True)
            with open(os.path.join(d, rel), "w") as f:
                f.write(text)
        buf = io.StringIO()
        assert check("clean", d, "lib.rs", {"r"}, buf) == 0, buf.getvalue()
        with open(os.path.join(d, "b.rs"), "a") as f:
            f.write("pub fn planted() { crate::a::f(Thing) }\n")
        with open(os.path.join(d, "r/x.rs"), "a") as f:
            f.write("fn planted(x: X) { x.more() }\n")
        buf = io.StringIO()
        found = check("planted", d, "lib.rs", {"r"}, buf)
        text = buf.getvalue()
        assert found == 2, text
        assert "b.rs -> a.rs: f (line" in text, text
        assert "a.rs -> b.rs: Thing (line" in text, text
        assert "r/x.rs -> r/z.rs: X::more (line 2)" in text, text
        assert "r/z.rs -> r/x.rs: X (line 1)" in text, text
    print("ok: check-circles self-test (a planted circle fails, the clean tree passes)")


def main():
    top = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    if "--self-test" in sys.argv:
        self_test()
        return 0
    found = 0
    for label, src, root_file, expanded in ROOTS:
        found += check(label, os.path.join(top, src), root_file, expanded)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
