"""Measures the structure of dsl/, codegen/ and runtime/ and holds it to a ratchet (issue 37).

Why: a few files, functions and classes have grown far past what one can read in one sitting,
and IR attributes are read and written by string ("wgmma_pending", "order", ...) all over the
passes, so a misspelt key fails at run time instead of at compile time. The targets below say
where the code should get to. It is not there yet, so the check cannot simply demand them:
tools/structure_baseline.json records today's offenders with their sizes, and the check fails
only when things get worse -- a new offender, an offender that grows, more string attribute
lookups -- and says when things got better, so that the baseline can be lowered. Over time the
baseline empties and the targets hold on their own.

What it measures, over the C++ sources and headers (.cpp .hpp .h .def) of those folders, tests
excluded:
  - lines per file;
  - lines per function body, from the line of its opening brace to that of its closing one,
    for function definitions at namespace or class scope (lambdas and local classes count as
    part of the function around them);
  - methods per class or struct: the distinct names of the member functions its body declares
    (constructors, destructors and operators included; `= delete`d ones and friends not), plus
    those of out-of-line `Class::method` definitions anywhere in the scanned files;
  - string attribute lookups: an IR attribute key written as a string literal -- the Op API
    (`op.int_attr("pending", 0)`, `has_attr("box")`, ...), the attribute map
    (`op.attrs["pending"] = ...`, `attrs.at("order")`, ...), and `{"axis", v}` entries of an
    `Attrs` initializer -- outside ATTRIBUTE_TABLE_FILES.
The scanner is a brace matcher over comments-, strings- and preprocessor-free text; it is good
enough for this codebase's clang-formatted style, not a C++ parser (code that macros generate
is not seen).

Usage: python3 tools/check_structure.py [--root DIR] [--update] [--verbose] [--top N]
    (no option)  prints the report, compares it with the baseline; exit 1 when worse
    --update     rewrites tools/structure_baseline.json from what it measures now
    --verbose    also lists every string attribute lookup
Run as the CTest test `structure`. The standard library only.
"""
import argparse
import bisect
import json
import os
import re
import sys
from dataclasses import dataclass, field

FOLDERS = ("dsl", "codegen", "runtime")
EXTENSIONS = (".cpp", ".hpp", ".h", ".def")
TEST_DIRS = {"test", "tests"}
BASELINE = os.path.join("tools", "structure_baseline.json")

# The targets: at most this many lines per file or function, methods per class, string
# attribute lookups outside the attribute table.
FILE_LINES = 800
FUNCTION_LINES = 150
CLASS_METHODS = 40
ATTRIBUTE_LOOKUPS = 0

# Files (relative to the root) that hold the attribute table, where attribute keys are spelt
# out once; lookups there do not count. None exists yet.
ATTRIBUTE_TABLE_FILES = ()

# Op accessors that take an attribute key, and which argument it is (0: the first).
ATTRIBUTE_KEY_CALLS = {
    "has_attr": 0,
    "int_attr": 0,
    "float_attr": 0,
    "str_attr": 0,
    "ints_attr": 0,
    "bad_attr": 0,
    "hint": 1,  # the DSL's tl::multiple_of & co.: detail::hint(v, "multiple_of", m, loc)
}
# std::map members that take a key, called on an attribute map.
MAP_KEY_METHODS = ("at", "find", "count", "contains", "erase", "emplace", "try_emplace",
                   "insert_or_assign")
# Names that hold an attribute map even where the file declares no `Attrs` variable of that name.
ATTRIBUTE_MAP_NAMES = {"attrs", "attrs_"}

NOT_FUNCTION_NAMES = {"alignas", "alignof", "decltype", "noexcept", "requires", "sizeof",
                      "static_assert", "typeid", "__attribute__", "if", "for", "while", "switch",
                      "catch", "return", "throw", "explicit"}
TRAILER_WORDS = {"const", "volatile", "override", "final", "mutable", "noexcept", "&", "&&",
                 "[]"}


@dataclass
class Function:
    path: str
    name: str  # qualified: tritium::codegen::Lowering::lower_op
    line: int
    lines: int
    body: tuple  # (offset of '{', offset of '}') in the file's text
    returns: str  # what the head says before the name (return type, specifiers)


@dataclass
class Class:
    path: str
    name: str
    line: int
    methods: set = field(default_factory=set)


@dataclass
class OutOfLine:
    """`Type Qualifier::method(...) {` at namespace scope: a method of a class, maybe."""
    path: str
    scope: list
    qualifier: list
    method: str


@dataclass
class Scope:
    kind: str  # "namespace" or "class"
    names: list  # qualified name parts (anonymous namespaces contribute none)
    cls: Class = None


@dataclass
class SourceFile:
    path: str
    text: str
    code: str  # comments and preprocessor lines blanked, literals kept
    skeleton: str  # also the contents of string and character literals blanked
    line_starts: list

    def line_of(self, offset):
        return bisect.bisect_right(self.line_starts, offset)


# ---------------------------------------------------------------------------------------------
# Reading the sources


def source_paths(root):
    """The scanned files, relative to root, sorted."""
    paths = []
    for folder in FOLDERS:
        for directory, subdirs, files in os.walk(os.path.join(root, folder)):
            subdirs[:] = sorted(d for d in subdirs if d not in TEST_DIRS)
            for name in sorted(files):
                if name.endswith(EXTENSIONS) and not re.search(r"_tests?\.", name):
                    paths.append(os.path.relpath(os.path.join(directory, name), root))
    return [p.replace(os.sep, "/") for p in paths]


def blank(chars, start, end):
    """Spaces over chars[start:end], newlines kept so that offsets and lines stay put."""
    for k in range(start, end):
        if chars[k] != "\n":
            chars[k] = " "


def literal_end(text, i, quote):
    """The offset of the quote that closes the literal opening at i."""
    j = i + 1
    while j < len(text) and text[j] != quote and text[j] != "\n":
        j += 2 if text[j] == "\\" else 1
    return min(j, len(text) - 1)


def is_digit_separator(text, i):
    """True when the quote at i sits inside a number (1'000'000), not starting a char literal."""
    k = i - 1
    while k >= 0 and (text[k].isalnum() or text[k] in "_.'"):
        k -= 1
    return k + 1 < i and text[k + 1].isdigit()


def raw_string_start(text, i):
    """True when the quote at i opens a raw string literal: R"delim(...)delim"."""
    if i == 0 or text[i - 1] != "R":
        return False
    prefix = re.search(r"(\w*)R$", text[max(0, i - 4):i]).group(1)
    return prefix in ("", "u8", "u", "U", "L")


def mask_source(text):
    """(code, skeleton): text without comments and preprocessor lines; the skeleton also without
    the contents of string and character literals (their quotes kept)."""
    code, skeleton = list(text), list(text)
    i, n, line_start = 0, len(text), True
    while i < n:
        c = text[i]
        if c == "\n":
            line_start = True
            i += 1
            continue
        if line_start and c in " \t":
            i += 1
            continue
        if line_start and c == "#":
            end = i
            while end < n and not (text[end] == "\n" and text[end - 1] != "\\"):
                end += 1
            blank(code, i, end)
            blank(skeleton, i, end)
            i = end
            continue
        line_start = False
        if text.startswith("//", i):
            end = text.find("\n", i)
            end = n if end < 0 else end
            blank(code, i, end)
            blank(skeleton, i, end)
            i = end
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            end = n if end < 0 else end + 2
            blank(code, i, end)
            blank(skeleton, i, end)
            i = end
        elif c == '"' and raw_string_start(text, i):
            open_paren = text.find("(", i)
            delimiter = text[i + 1:open_paren]
            close = text.find(")" + delimiter + '"', open_paren)
            close = n - 1 if close < 0 else close + len(delimiter) + 1
            blank(skeleton, i + 1, close)
            i = close + 1
        elif c == '"' or (c == "'" and not is_digit_separator(text, i)):
            close = literal_end(text, i, c)
            blank(skeleton, i + 1, close)
            i = close + 1
        else:
            i += 1
    return "".join(code), "".join(skeleton)


def read_source(root, path):
    with open(os.path.join(root, path), encoding="utf-8", errors="replace") as f:
        text = f.read()
    code, skeleton = mask_source(text)
    line_starts = [0] + [m.end() for m in re.finditer(r"\n", text)]
    return SourceFile(path, text, code, skeleton, line_starts)


def count_lines(text):
    return text.count("\n") + (1 if text and not text.endswith("\n") else 0)


# ---------------------------------------------------------------------------------------------
# Declarations: what a head (the text before a '{' or a ';') declares


def opens_template(text, i):
    """True when the '<' at i opens template arguments (after a name, not after `operator`)."""
    before = text[:i].rstrip()
    return bool(before) and (before[-1].isalnum() or before[-1] == "_") and \
        not re.search(r"\boperator$", before)


def flatten(head):
    """The head with the insides of (), [], {} and template <> dropped: `int f()` for
    `int f(std::vector<int> v = {})`, so that regexes see its shape only."""
    out, depth, angle = [], 0, 0
    for i, c in enumerate(head):
        if c in "([{":
            if depth == 0 and angle == 0:
                out.append(c)
            depth += 1
        elif c in ")]}":
            depth = max(depth - 1, 0)
            if depth == 0 and angle == 0:
                out.append(c)
        elif depth == 0 and c == "<" and (angle > 0 or opens_template(head, i)):
            if angle == 0:
                out.append(c)
            angle += 1
        elif depth == 0 and c == ">" and angle > 0:
            angle -= 1
            if angle == 0:
                out.append(c)
        elif depth == 0 and angle == 0:
            out.append(c)
    return "".join(out)


def strip_labels(head):
    """The head without leading access labels (`public:`) and template parameter lists."""
    return re.sub(r"^\s*(?:(?:public|private|protected)\s*:(?!:)\s*|template\s*<>\s*)*", "",
                  head)


FUNCTION_NAME = re.compile(
    r"(?<![\w:~])(?P<name>(?:~?\w+\s*(?:<>)?\s*::\s*)*"
    r"(?:operator\s*(?:\(\)|\[\]|[^\w\s(]+|\s+[\w:]+(?:\s*[*&])*)|~?\w+))\s*(?:<>)?\s*\(\)")


def valid_trailer(trailer):
    """(valid, ctor-init): whether what follows a parameter list can end a function head."""
    ctor_init = re.search(r"(?<!:):(?!:)", trailer)
    if ctor_init:
        trailer = trailer[:ctor_init.start()]
    trailer = re.sub(r"\brequires\b.*", " ", trailer, flags=re.S)
    trailer = re.sub(r"->\s*[\w\s:<>*&]*", " ", trailer)
    trailer = re.sub(r"=\s*(?:0|default|delete)\b", " ", trailer)
    trailer = re.sub(r"\b(?:noexcept|throw)\s*(?:\(\))?", " ", trailer)
    tokens = re.findall(r"&&|&|\[\]|\w+|\S", trailer)
    return all(t in TRAILER_WORDS for t in tokens), bool(ctor_init)


@dataclass
class Declarator:
    name: str  # as written, maybe qualified: Op::int_attr
    returns: str
    trailer: str
    ctor_init: bool


def function_declarator(head):
    """The function a head declares or defines, or None when it is something else."""
    flat = strip_labels(flatten(head))
    for m in FUNCTION_NAME.finditer(flat):
        name = m.group("name")
        last = re.split(r"::", name)[-1].strip()
        if last in NOT_FUNCTION_NAMES:
            continue
        returns, trailer = flat[:m.start()], flat[m.end():]
        valid, ctor_init = valid_trailer(trailer)
        if not valid:
            continue
        if "=" in returns or re.search(r"\b(?:return|using|typedef)\b", returns):
            return None
        return Declarator(normalize_name(name), returns, trailer, ctor_init)
    return None


def normalize_name(name):
    name = re.sub(r"\s*::\s*", "::", name.replace("<>", ""))
    return re.sub(r"\s+", " ", name).strip()


CLASS_HEAD = re.compile(
    r"^\s*(?:class|struct|union)\b(?:\s*\[\])*(?:\s*alignas\(\))?\s*(?P<name>\w+(?:::\w+)*)?"
    r"\s*(?:<>)?\s*(?:final\b)?\s*(?::(?!:).*)?$", re.S)


def classify_head(head):
    """What a '{' after this head opens: namespace, extern (a linkage block), class, function,
    or other (an initializer, an enum)."""
    flat = strip_labels(flatten(head))
    if re.match(r"^\s*(?:inline\s+)?namespace\b", flat):
        return "namespace"
    if re.match(r'^\s*extern\s*"\s*"\s*$', flat):
        return "extern"
    if CLASS_HEAD.match(flat):
        return "class"
    if re.match(r"^\s*enum\b", flat):
        return "other"
    return "function" if function_declarator(head) else "other"


def namespace_names(head):
    m = re.search(r"namespace\s+([\w:]+)", flatten(head))
    return [n for n in m.group(1).split("::") if n] if m else []


def match_brace(skeleton, i):
    """The offset of the '}' that closes the '{' at i (the end of the text when none does)."""
    depth = 0
    for j in range(i, len(skeleton)):
        if skeleton[j] == "{":
            depth += 1
        elif skeleton[j] == "}":
            depth -= 1
            if depth == 0:
                return j
    return len(skeleton) - 1


def member_init_brace(head, skeleton, i):
    """True when the '{' at i initializes a member in a constructor's init list (`: a_{x} {`)."""
    d = function_declarator(head)
    if not d or not d.ctor_init:
        return False
    before = skeleton[:i].rstrip()
    return bool(before) and (before[-1].isalnum() or before[-1] in "_>")


# ---------------------------------------------------------------------------------------------
# Scanning a file's scopes


@dataclass
class Scan:
    functions: list = field(default_factory=list)
    classes: list = field(default_factory=list)
    out_of_line: list = field(default_factory=list)
    unbalanced: bool = False


def scope_names(scope):
    return list(scope.names)


def add_method(scope, d):
    """A member function declared or defined in a class body goes into its set of methods."""
    if scope.kind != "class" or scope.cls is None or "::" in d.name:
        return
    if re.search(r"\bfriend\b", d.returns) or re.search(r"=\s*delete\b", d.trailer):
        return
    own = scope.cls.name.split("::")[-1]
    specifiers_only = not re.sub(r"\b(?:explicit|constexpr|inline|virtual|static)\b|\[\]", "",
                                 d.returns).strip()
    if specifiers_only and d.name not in (own, "~" + own) and not d.name.startswith("operator"):
        return  # a macro invocation in the class body, not a member
    scope.cls.methods.add(d.name)


def add_out_of_line(source, scope, d, scan):
    if "::" in d.name and scope.kind == "namespace":
        *qualifier, method = d.name.split("::")
        scan.out_of_line.append(OutOfLine(source.path, scope_names(scope), qualifier, method))


def on_statement(source, scope, head, scan):
    """A head that ends in ';': in a class, maybe a method declaration; `X::X() = default;`
    outside one."""
    d = function_declarator(head)
    if d:
        add_method(scope, d)
        if "=" in d.trailer:
            add_out_of_line(source, scope, d, scan)


def on_function(source, scope, head, start, scan):
    """A function body opening at start: records it; returns the offset of its closing brace."""
    d = function_declarator(head)
    end = match_brace(source.skeleton, start)
    first, last = source.line_of(start), source.line_of(end)
    name = "::".join(scope_names(scope) + [d.name])
    scan.functions.append(Function(source.path, name, first, last - first + 1, (start, end),
                                   d.returns))
    add_method(scope, d)
    add_out_of_line(source, scope, d, scan)
    return end


def on_class(source, scope, head, start, scan):
    """A class body at start: scans it as a scope of its own."""
    m = CLASS_HEAD.match(strip_labels(flatten(head)))
    name = m.group("name")
    if name is None:
        inner = Scope("class", scope_names(scope) + ["(anonymous)"], None)
    else:
        names = scope_names(scope) + name.split("::")
        cls = Class(source.path, "::".join(names), source.line_of(start))
        scan.classes.append(cls)
        inner = Scope("class", names, cls)
    return scan_scope(source, start + 1, inner, scan)


def scan_scope(source, pos, scope, scan):
    """Reads the declarations of a namespace or class body from pos to its closing '}'; returns
    the offset after it."""
    s = source.skeleton
    head_start, i = pos, pos
    while i < len(s):
        c = s[i]
        if c == ";":
            on_statement(source, scope, s[head_start:i], scan)
            head_start = i + 1
        elif c == "}":
            return i + 1
        elif c == "{":
            head = s[head_start:i]
            kind = classify_head(head)
            if kind == "namespace":
                inner = Scope("namespace", scope_names(scope) + namespace_names(head))
                i = head_start = scan_scope(source, i + 1, inner, scan)
                continue
            if kind == "extern":
                i = head_start = scan_scope(source, i + 1, scope, scan)
                continue
            if kind == "class":
                i = head_start = on_class(source, scope, head, i, scan)
                continue
            if kind == "function" and not member_init_brace(head, s, i):
                i = head_start = on_function(source, scope, head, i, scan) + 1
                continue
            i = match_brace(s, i)  # an initializer: the head goes on to its ';'
        i += 1
    if scope.kind != "namespace" or scope.names:
        scan.unbalanced = True
    return i


def scan_file(source):
    scan = Scan()
    pos = 0
    while pos < len(source.skeleton):
        pos = scan_scope(source, pos, Scope("namespace", []), scan)
        if pos < len(source.skeleton):
            scan.unbalanced = True  # a '}' closing nothing
    return scan


def unique_function_names(functions):
    """Overloads in one file get #2, #3, ... in the order they appear."""
    seen = {}
    for f in functions:
        key = (f.path, f.name)
        seen[key] = seen.get(key, 0) + 1
        if seen[key] > 1:
            f.name = f"{f.name} #{seen[key]}"


def resolve_out_of_line(classes, out_of_line):
    """Adds each out-of-line definition's method to the class its qualifier names, looked up
    from the namespace it is written in outwards, the class of its own file first."""
    by_name = {}
    for cls in classes:
        by_name.setdefault(cls.name, []).append(cls)
    for o in out_of_line:
        for k in range(len(o.scope), -1, -1):
            candidates = by_name.get("::".join(o.scope[:k] + o.qualifier))
            if candidates:
                same_file = [c for c in candidates if c.path == o.path]
                (same_file or candidates)[0].methods.add(o.method)
                break


# ---------------------------------------------------------------------------------------------
# String attribute lookups


@dataclass
class Lookup:
    path: str
    line: int
    text: str


def call_arguments(skeleton, open_paren):
    """[(start, end)] of the top-level arguments of the call whose '(' is at open_paren."""
    args, depth, start = [], 0, open_paren + 1
    for j in range(open_paren, len(skeleton)):
        c = skeleton[j]
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
            if depth == 0:
                args.append((start, j))
                return args
        elif c == "," and depth == 1:
            args.append((start, j))
            start = j + 1
    return args


def is_string_literal(code, span):
    return code[span[0]:span[1]].lstrip().startswith('"')


def attribute_map_names(source):
    """The names that hold an attribute map in this file: `Attrs a;`, `const ir::Attrs& attrs`."""
    declared = re.findall(r"\bAttrs\b\s*&{0,2}\s*(\w+)", source.skeleton)
    return ATTRIBUTE_MAP_NAMES | set(declared)


def attribute_taking_functions(sources):
    """Names of the functions that have an `Attrs` parameter (create1, debug_op, ...)."""
    names = set()
    for source in sources:
        for m in re.finditer(r"\b(\w+)\s*\(", source.skeleton):
            args = call_arguments(source.skeleton, m.end() - 1)
            if args and re.search(r"\bAttrs\b", source.skeleton[args[0][0]:args[-1][1]]):
                names.add(m.group(1))
    return names - NOT_FUNCTION_NAMES


def accessor_lookups(source):
    """Offsets of `int_attr("key")`, `has_attr("key")`, ... calls."""
    found = []
    pattern = r"\b(" + "|".join(ATTRIBUTE_KEY_CALLS) + r")\s*(?:<[^<>;{}]*>)?\s*\("
    for m in re.finditer(pattern, source.skeleton):
        args = call_arguments(source.skeleton, m.end() - 1)
        index = ATTRIBUTE_KEY_CALLS[m.group(1)]
        if index < len(args) and is_string_literal(source.code, args[index]):
            found.append(m.start())
    return found


def map_lookups(source):
    """Offsets of `attrs["key"]`, `op.attrs.at("key")`, ... on attribute maps."""
    names = "|".join(sorted(attribute_map_names(source)))
    methods = "|".join(MAP_KEY_METHODS)
    pattern = rf"\b(?:{names})\s*(?:\[|\.\s*(?:{methods})\s*\()"
    found = []
    for m in re.finditer(pattern, source.skeleton):
        if source.code[m.end():].lstrip().startswith('"'):
            found.append(m.start())
    return found


def enclosing_brace_context(skeleton, pos):
    """Walks out of the braced list around pos to what it belongs to: ("call", name) for an
    argument, ("declaration", text) for `T x{...}` or `T x = {...}`, ("return", offset), or
    None (a block, an index, the statement's start)."""
    depth, j = 0, pos - 1
    while j >= 0:
        c = skeleton[j]
        if c in ")]}":
            depth += 1
        elif c in "([{" and depth:
            depth -= 1
        elif c == "(":
            name = re.search(r"(\w+)\s*(?:<[^<>;{}]*>)?\s*$", skeleton[max(0, j - 200):j])
            return ("call", name.group(1)) if name else None
        elif c == "[":
            return None
        elif c == "{":
            before = skeleton[max(0, j - 200):j].rstrip()
            if re.search(r"\breturn$", before):
                return ("return", j)
            if before.endswith("="):
                return ("declaration", before)
            if before and (before[-1].isalnum() or before[-1] in "_>"):
                return ("declaration", before)
            if not before or before[-1] not in ",({":
                return None  # a block
        elif c == ";" and depth == 0:
            return None
        j -= 1
    return None


def returns_attributes(functions, offset):
    """True when the function whose body holds offset returns an `Attrs`."""
    for f in functions:
        if f.body[0] < offset < f.body[1]:
            return bool(re.search(r"\bAttrs\b", f.returns))
    return False


def initializer_lookups(source, functions, taking_attrs):
    """Offsets of `{"key", value}` entries of an attribute map's initializer."""
    found = []
    for m in re.finditer(r'\{\s*"', source.code):
        if not re.match(r'\{\s*"[^"\n]*"\s*,', source.code[m.start():]):
            continue
        context = enclosing_brace_context(source.skeleton, m.start())
        if context is None:
            continue
        kind, what = context
        if (kind == "call" and what in taking_attrs) or \
           (kind == "declaration" and re.search(r"\bAttrs\b\s*(?:\w+\s*)?=?$", what)) or \
           (kind == "return" and returns_attributes(functions, what)):
            found.append(m.start())
    return found


def attribute_lookups(source, functions, taking_attrs):
    if source.path in ATTRIBUTE_TABLE_FILES:
        return []
    offsets = accessor_lookups(source) + map_lookups(source) + \
        initializer_lookups(source, functions, taking_attrs)
    lookups = []
    for offset in sorted(set(offsets)):
        line = source.line_of(offset)
        text = source.text[source.line_starts[line - 1]:].split("\n", 1)[0].strip()
        lookups.append(Lookup(source.path, line, text))
    return lookups


# ---------------------------------------------------------------------------------------------
# Measuring, reporting, the ratchet


@dataclass
class Measurement:
    files: dict  # path -> lines
    functions: list
    classes: list
    lookups: list
    unbalanced: list


def measure(root):
    sources = [read_source(root, p) for p in source_paths(root)]
    functions, classes, out_of_line, unbalanced = [], [], [], []
    per_file_functions = {}
    for source in sources:
        scan = scan_file(source)
        functions += scan.functions
        classes += scan.classes
        out_of_line += scan.out_of_line
        per_file_functions[source.path] = scan.functions
        if scan.unbalanced:
            unbalanced.append(source.path)
    resolve_out_of_line(classes, out_of_line)
    unique_function_names(functions)
    taking_attrs = attribute_taking_functions(sources)
    lookups = []
    for source in sources:
        lookups += attribute_lookups(source, per_file_functions[source.path], taking_attrs)
    files = {s.path: count_lines(s.text) for s in sources}
    return Measurement(files, functions, classes, lookups, unbalanced)


def function_key(f):
    return f"{f.path}: {f.name}"


def class_key(c):
    return f"{c.path}: {c.name}"


def offenders(m):
    """Everything over its target: {"files"|"functions"|"classes": {key: size}}."""
    return {
        "files": {p: n for p, n in m.files.items() if n > FILE_LINES},
        "functions": {function_key(f): f.lines for f in m.functions if f.lines > FUNCTION_LINES},
        "classes": {class_key(c): len(c.methods) for c in m.classes
                    if len(c.methods) > CLASS_METHODS},
    }


def print_top(title, rows, target, unit, top):
    """rows: [(size, label)], the largest first."""
    over = sum(1 for size, _ in rows if size > target)
    print(f"{title}: {over} of {len(rows)} over the target of {target} {unit}")
    for size, label in rows[:top]:
        print(f"  {'*' if size > target else ' '}{size:6}  {label}")


def print_report(m, top):
    print(f"Structure of {', '.join(f + '/' for f in FOLDERS)} (tests excluded); "
          "* marks what is over its target")
    files = sorted(((n, p) for p, n in m.files.items()), reverse=True)
    print_top("Files (lines)", files, FILE_LINES, "lines", top)
    functions = sorted(((f.lines, f"{f.path}:{f.line}  {f.name}") for f in m.functions),
                       key=lambda r: (-r[0], r[1]))
    print_top("Functions (lines of body)", functions, FUNCTION_LINES, "lines", top)
    classes = sorted(((len(c.methods), f"{c.path}:{c.line}  {c.name}") for c in m.classes),
                     key=lambda r: (-r[0], r[1]))
    print_top("Classes (methods)", classes, CLASS_METHODS, "methods", top)
    per_file = {}
    for lookup in m.lookups:
        per_file[lookup.path] = per_file.get(lookup.path, 0) + 1
    print(f"String attribute lookups outside the attribute table: {len(m.lookups)} "
          f"(target {ATTRIBUTE_LOOKUPS}), in {len(per_file)} files")
    for path, n in sorted(per_file.items(), key=lambda kv: (-kv[1], kv[0]))[:top]:
        print(f"  {n:6}  {path}")
    for path in m.unbalanced:
        print(f"warning: {path}: braces do not balance; its functions may be mismeasured")


def print_lookups(m):
    print("String attribute lookups:")
    for lookup in m.lookups:
        print(f"  {lookup.path}:{lookup.line}: {lookup.text}")


def compare_category(name, unit, current, recorded, target):
    """(failures, lowerable) of one category of offenders against the baseline."""
    failures, lowerable = [], []
    for key, size in sorted(current.items()):
        if key not in recorded:
            failures.append(f"new {name} over {target} {unit}: {key} ({size})")
        elif size > recorded[key]:
            failures.append(f"{name} grew: {key} ({recorded[key]} -> {size} {unit})")
        elif size < recorded[key]:
            lowerable.append(f"{name} shrank: {key} ({recorded[key]} -> {size} {unit})")
    for key in sorted(set(recorded) - set(current)):
        lowerable.append(f"{name} no longer over {target} {unit} (or renamed): {key}")
    return failures, lowerable


def compare(m, baseline):
    now = offenders(m)
    failures, lowerable = [], []
    for category, name, unit, target in (("files", "file", "lines", FILE_LINES),
                                         ("functions", "function", "lines", FUNCTION_LINES),
                                         ("classes", "class", "methods", CLASS_METHODS)):
        f, l = compare_category(name, unit, now[category], baseline.get(category, {}), target)
        failures += f
        lowerable += l
    recorded = baseline.get("attribute_lookups", 0)
    if len(m.lookups) > recorded:
        failures.append(f"string attribute lookups rose: {recorded} -> {len(m.lookups)} "
                        "(--verbose lists them)")
    elif len(m.lookups) < recorded:
        lowerable.append(f"string attribute lookups fell: {recorded} -> {len(m.lookups)}")
    return failures, lowerable


def baseline_document(m):
    now = offenders(m)
    return {
        "about": "Offenders of tools/check_structure.py's targets and their sizes; the check "
                 "fails when one grows or a new one appears. Lower it with --update.",
        "targets": {"file_lines": FILE_LINES, "function_lines": FUNCTION_LINES,
                    "class_methods": CLASS_METHODS, "attribute_lookups": ATTRIBUTE_LOOKUPS},
        "files": now["files"],
        "functions": now["functions"],
        "classes": now["classes"],
        "attribute_lookups": len(m.lookups),
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--root", default=os.path.dirname(os.path.dirname(os.path.abspath(
        __file__))), help="the tritium source tree (default: this script's parent folder)")
    parser.add_argument("--update", action="store_true", help="rewrite the baseline")
    parser.add_argument("--verbose", action="store_true",
                        help="list every string attribute lookup")
    parser.add_argument("--top", type=int, default=10, help="rows per table (default 10)")
    args = parser.parse_args()
    baseline_path = os.path.join(args.root, BASELINE)

    m = measure(args.root)
    print_report(m, args.top)
    if args.verbose:
        print_lookups(m)
    print()
    if args.update:
        with open(baseline_path, "w", encoding="utf-8") as f:
            json.dump(baseline_document(m), f, indent=2, sort_keys=True)
            f.write("\n")
        print(f"wrote {BASELINE}")
        return 0
    if not os.path.exists(baseline_path):
        print(f"FAILED: no {BASELINE}; run tools/check_structure.py --update to make one")
        return 1
    with open(baseline_path, encoding="utf-8") as f:
        baseline = json.load(f)
    failures, lowerable = compare(m, baseline)
    for line in lowerable:
        print(f"better: {line}")
    if lowerable:
        print(f"baseline can be lowered: run with --update (and commit {BASELINE})")
    for line in failures:
        print(f"worse: {line}")
    if failures:
        print(f"FAILED: {len(failures)} structure regression(s) against {BASELINE}. Shrink them "
              "back below the baseline (split the file, function or class; read the attribute "
              "through the table). A new name for an old offender (a rename, a move) counts as "
              "new: then --update, and say so in the commit.")
        return 1
    print(f"passed: nothing over its target grew, against {BASELINE}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
