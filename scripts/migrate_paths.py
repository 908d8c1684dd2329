#!/usr/bin/env python3
"""Rewrite uses of evloop's old public paths to the new ones (issue 18, item 5).

Usage: rewrite_paths.py FILE...   (rewrites in place; prints the files it changed)

Handles `use evloop::{...};` trees (regrouped per first segment), inline `evloop::name` paths in
code, doc comments and Markdown, and `crate::name` intra-doc links inside runtime/src doc comments.
Also: `use evloop::*;` becomes the names the file uses (plus `evloop::prelude::*` where I/O trait
methods are called), `run_with`/`Runner::with_builder`/the streams' `_with(config)` forms, the
loop's stream methods and `subprocess_exec_with`/`subprocess_shell_with`/`create_datagram_endpoint_with`
with their options written out in the call become the builders, the renamed getters are renamed, and the free
`all_tasks()`/`task_tree()` become the running loop's methods.
What it cannot map (removed items) is left alone for the compiler to point at. Do not run it over
text that quotes the old spellings on purpose (CHANGELOG.md): it rewrites them.
"""
import re
import sys

MOD = {}


def put(module, names):
    for n in names.split():
        MOD[n] = module


put("event_loop", "LoopError LoopErrorKind WrongLoopError Panic ExecutorError ExecutorJob CallbackId Handle "
    "TimerHandle Awaiting AwaitKind BoxedExceptionHandler SharedExceptionHandler ExceptionContext ExceptionKind "
    "default_exception_handler Builder EventLoop LoopHandle LoopStats RemoteHandle get_running_loop MAX_TIMER_SLACK")
put("task", "InvalidStateError PromiseError RunError TaskError AsCompleted Either Gather ReturnWhen Shield TryGather "
    "as_completed gather race shield shield_future try_gather wait ChildError GroupError TaskGroup Promise "
    "PromiseFuture Runner YieldNow yield_now TaskNode TaskTree task_tree Task TaskBuilder TaskRef TaskState "
    "all_tasks current_task GatherVec TryGatherVec")
put("time", "Elapsed Sleep sleep sleep_until timeout timeout_at Timeout TimeoutHandle")
put("io", "OpError os_error AsyncFd AsyncRead AsyncReadExt AsyncWrite AsyncWriteExt Interest")
put("protocol", "DEFAULT_ACCEPT_RETRY_DELAY DatagramDropped DatagramOptions DatagramProtocol DatagramTransport "
    "DEFAULT_DATAGRAM_QUEUE_LIMIT Protocol Server Transport DEFAULT_HIGH_WATER")
put("streams", "StreamError StreamReader StreamWriter open_connection open_unix_connection start_server "
    "start_unix_server open_connection_with open_unix_connection_with start_server_with start_unix_server_with "
    "StreamConfig")
put("sync", "Barrier BoundedSemaphore Condition Event Lock LockGuard Mutex MutexGuard Semaphore SemaphorePermit "
    "SyncError SyncOp")
put("sync::queue", "Queue QueueShutDown TaskDoneError TryGetError TryPutError")
# Root names that stay at the root.
ROOT = set("run spawn main test select join try_join".split())
# Names that are gone from the paths; their calls are rewritten by CALLS below, so a `use` of one
# is dropped.
REMOVED = set("run_with StreamConfig all_tasks task_tree".split())
# Whole modules that moved (prefix rewrites, longest first).
PREFIX = [
    ("io::net", "net"),
    ("io::stream", "streams"),
    ("io::pipe", "pipe"),
    ("sync::channel", "sync"),
    ("channel", "sync"),
    ("stream", "streams"),
    ("queue", "sync::queue"),
]
# `select` at the root is the macro; the function moves to task. Decided per occurrence below.


# Items renamed (the last segment of a path), after the move.
RENAMES = {
    "open_connection_with": "open_connection",
    "open_unix_connection_with": "open_unix_connection",
    "start_server_with": "start_server",
    "start_unix_server_with": "start_unix_server",
}


def map_path(segs):
    """segs: a list of path segments after `evloop`. Returns the new list."""
    segs = move_path(segs)
    if segs and segs[-1] in RENAMES:
        segs = segs[:-1] + [RENAMES[segs[-1]]]
    return segs


def move_path(segs):
    if not segs:
        return segs
    joined = "::".join(segs)
    for old, new in PREFIX:
        if joined == old or joined.startswith(old + "::"):
            rest = joined[len(old):]
            return (new + rest).split("::")
    first = segs[0]
    if first in MOD:
        return MOD[first].split("::") + segs
    return segs


# ---- use-tree parsing -------------------------------------------------------------------------

def parse_tree(s, i):
    """Parse a use tree starting at s[i]; returns (list of (path_segments, alias_or_None), i)."""
    items = []
    i = skip_ws(s, i)
    if s[i] == "{":
        i += 1
        while True:
            i = skip_ws(s, i)
            if s[i] == "}":
                return items, i + 1
            sub, i = parse_tree(s, i)
            items.extend(sub)
            i = skip_ws(s, i)
            if s[i] == ",":
                i += 1
            elif s[i] == "}":
                return items, i + 1
            else:
                raise ValueError("bad use tree at %d: %r" % (i, s[i:i + 20]))
    m = re.compile(r"(\*|[A-Za-z_][A-Za-z0-9_]*)").match(s, i)
    if not m:
        raise ValueError("bad use tree at %d: %r" % (i, s[i:i + 20]))
    name = m.group(1)
    i = m.end()
    j = skip_ws(s, i)
    if s.startswith("::", j):
        sub, i = parse_tree(s, j + 2)
        return [([name] + p, a) for p, a in sub], i
    alias = None
    m2 = re.compile(r"\s+as\s+([A-Za-z_][A-Za-z0-9_]*)").match(s, i)
    if m2:
        alias = m2.group(1)
        i = m2.end()
    return [([name], alias)], i


def skip_ws(s, i):
    while i < len(s) and s[i] in " \t\r\n":
        i += 1
    return i


def leaf_text(path, alias):
    t = "::".join(path)
    if alias:
        t += " as " + alias
    return t


def build(paths):
    """paths: list of (segs, alias) -> a use-tree string (without `evloop::`), braces where needed."""
    leaves = []
    mods = {}
    order = []
    for segs, alias in paths:
        if len(segs) == 1:
            t = leaf_text(segs, alias)
            if t not in leaves:
                leaves.append(t)
        else:
            if segs[0] not in mods:
                mods[segs[0]] = []
                order.append(segs[0])
            mods[segs[0]].append((segs[1:], alias))
    parts = list(leaves)
    for m in order:
        parts.append(m + "::" + build(mods[m]))
    parts = sorted(set(parts), key=lambda p: (p.lower(), p))
    if len(parts) == 1:
        return parts[0]
    return "{" + ", ".join(parts) + "}"


USE_RE = re.compile(r"\buse\s+(::)?evloop::")


def rewrite_uses(text):
    out = []
    i = 0
    while True:
        m = USE_RE.search(text, i)
        if not m:
            out.append(text[i:])
            break
        start = m.end()
        try:
            items, end = parse_tree(text, start)
        except (ValueError, IndexError):
            out.append(text[i:m.end()])
            i = m.end()
            continue
        new_items = []
        for segs, alias in items:
            if segs[-1] in REMOVED and alias is None and (len(segs) == 1 or segs[:-1] in (["task"], ["streams"], ["stream"])):
                continue
            if segs == ["select"] and alias is None:
                # `select` named the macro and the function: the macro stays at the root, the
                # function is `task::select`; keep what the file calls.
                code = re.sub(r"//[^\n]*", "", text)
                if re.search(r"(?<![.:A-Za-z0-9_])select\s*\(", code):
                    new_items.append((["task", "select"], None))
                if re.search(r"(?<![.:A-Za-z0-9_])select\s*!", code) or not re.search(
                        r"(?<![.:A-Za-z0-9_])select\s*\(", code):
                    new_items.append((segs, alias))
                continue
            new_items.append((map_path(segs), alias))
        if new_items == items:
            out.append(text[i:end])
            i = end
            continue
        if not new_items:
            # every name of the tree is gone: drop the whole `use ...;` line
            semi = text.find(";", end)
            line_start = text.rfind("\n", 0, m.start()) + 1
            if text[line_start:m.start()].strip() in ("", "pub", "pub(crate)"):
                nl = text.find("\n", semi)
                out.append(text[i:line_start])
                i = nl + 1 if nl >= 0 else len(text)
            else:
                out.append(text[i:end])
                i = end
            continue
        tree = build(new_items)
        out.append(text[i:start])
        out.append(tree)
        i = end
    return "".join(out)


INLINE_RE = re.compile(r"(?<![A-Za-z0-9_:])(\$crate|evloop)::((?:[A-Za-z_][A-Za-z0-9_]*::)*[A-Za-z_][A-Za-z0-9_]*)(!?)")


def text_after(m):
    s = m.string[m.end():m.end() + 1]
    return s


def rewrite_inline(text):
    def rep(m):
        root, path, bang = m.group(1), m.group(2), m.group(3)
        segs = path.split("::")
        if bang:
            return m.group(0)  # macros stay at the root
        if root == "$crate":
            return m.group(0)
        if segs == ["select"] and text_after(m) == "(":
            return root + "::task::select"
        new = map_path(segs)
        return root + "::" + "::".join(new) + bang
    return INLINE_RE.sub(rep, text)


DOC_LINK_RE = re.compile(r"\(crate::((?:[A-Za-z_][A-Za-z0-9_]*::)*[A-Za-z_][A-Za-z0-9_]*)((?:!|\(\))?)\)")


def rewrite_doc_links(text):
    lines = text.split("\n")
    for k, line in enumerate(lines):
        s = line.lstrip()
        if not (s.startswith("///") or s.startswith("//!")):
            continue

        def rep(m):
            segs = m.group(1).split("::")
            if m.group(2) == "!":
                return m.group(0)
            return "(crate::" + "::".join(map_path(segs)) + m.group(2) + ")"
        lines[k] = DOC_LINK_RE.sub(rep, line)
    return "\n".join(lines)


# ---- call rewrites: `f(a, b)` -> `a.g(b)` --------------------------------------------------------

def split_args(text, i):
    """text[i] is just after `(`; returns (list of top-level argument strings, index after `)`)."""
    depth = 0
    args = []
    cur = i
    k = i
    in_str = False
    while k < len(text):
        c = text[k]
        if in_str:
            if c == "\\":
                k += 2
                continue
            if c == '"':
                in_str = False
        elif c == '"':
            in_str = True
        elif c in "([{":
            depth += 1
        elif c in ")]}":
            if depth == 0:
                args.append(text[cur:k])
                return [a for a in args if a.strip() or len(args) > 1], k + 1
            depth -= 1
        elif c == "," and depth == 0:
            args.append(text[cur:k])
            cur = k + 1
        k += 1
    raise ValueError("unbalanced")


def stream_options(cfg):
    """The builder methods for a `StreamConfig` expression."""
    cfg = cfg.strip()
    if cfg in ("StreamConfig::new()", "StreamConfig::default()"):
        return ""
    m = re.fullmatch(r"(?:[\w:]*::)?StreamConfig::new\(\)\.limit\((.*)\)", cfg)
    if m:
        return ".limit(%s)" % m.group(1)
    return ".limit(/* migrate: was %s */)" % cfg


def with_options(name, nargs):
    """`name_with(a.., config)` -> `name(a..)` and the config's options as builder methods."""
    return lambda a: "%s(%s)%s" % (name, ", ".join(x.strip() for x in a[:nargs]), stream_options(a[nargs]))


def builder_options(name, nargs, kind):
    """`x.name_with(a.., &KindOptions::new().setters())` -> `x.name(a..).setters()`; an options
    value that is not written out in the call is left for the compiler to point at."""
    def rewrite(a):
        m = re.fullmatch(r"&?\s*(?:[\w:]*::)?%sOptions::(new|default|piped)\(\)((?:\s*\.\w+\(.*\))*)" % kind,
                         a[nargs].strip(), re.S)
        if not m:
            return "%s_with(%s)" % (name, ", ".join(x.strip() for x in a))
        return "%s(%s)%s%s" % (name, ", ".join(x.strip() for x in a[:nargs]),
                               ".piped()" if m.group(1) == "piped" else "", re.sub(r"\s+", "", m.group(2)))
    return rewrite


# (regex of the call up to and including `(`, function turning the argument list into new text)
CALLS = [
    # the loop's `_with(options)` spawns and datagram endpoints -> the builders' setters (awaiting
    # the builder, or `.spawn()` outside a task, is left to the compiler's `?` errors)
    (re.compile(r"(?<![A-Za-z0-9_])subprocess_exec_with\("), builder_options("subprocess_exec", 2, "Subprocess")),
    (re.compile(r"(?<![A-Za-z0-9_])subprocess_shell_with\("), builder_options("subprocess_shell", 1, "Subprocess")),
    (re.compile(r"(?<![A-Za-z0-9_])create_datagram_endpoint_with\("),
     builder_options("create_datagram_endpoint", 3, "Datagram")),
    # the free all_tasks()/task_tree() -> the running loop's methods (kept: they work from outside the loop too)
    (re.compile(r"(?<![A-Za-z0-9_.`])(?<!fn )(?:evloop::)?(?:task::)?all_tasks\("),
     lambda a: "evloop::event_loop::get_running_loop().map(|lp| lp.all_tasks()).unwrap_or_default()"),
    (re.compile(r"(?<![A-Za-z0-9_.`])(?<!fn )(?:evloop::)?(?:task::)?task_tree\("),
     lambda a: "evloop::event_loop::get_running_loop().ok().map(|lp| lp.task_tree())"),
    # LoopHandle::current_task() -> the free function (the method was None outside a step)
    (re.compile(r"(?<![A-Za-z0-9_.`])(?!asyncio\.)[A-Za-z_][A-Za-z0-9_]*\.current_task\("),
     lambda a: "evloop::task::current_task()"),
    # the streams' `_with(config)` forms -> the builders' options
    (re.compile(r"(?<![A-Za-z0-9_.])open_connection_with\("), with_options("open_connection", 2)),
    (re.compile(r"(?<![A-Za-z0-9_.])open_unix_connection_with\("), with_options("open_unix_connection", 1)),
    (re.compile(r"(?<![A-Za-z0-9_.])start_server_with\("), with_options("start_server", 3)),
    (re.compile(r"(?<![A-Za-z0-9_.])start_unix_server_with\("), with_options("start_unix_server", 2)),
    # the loop's stream methods -> the module functions (on the running loop)
    (re.compile(r"(?<![A-Za-z0-9_.`])(?!asyncio\.)[A-Za-z_][A-Za-z0-9_]*\.(open_connection|open_unix_connection|start_server|"
                r"start_unix_server)(?:_with)?\("), None),
    # evloop::run_with(builder, fut) -> builder.run(fut)
    (re.compile(r"(?<![A-Za-z0-9_.])(?:evloop::)?run_with\("),
     lambda a: "%s.run(%s)" % (a[0].strip(), ", ".join(x.strip() for x in a[1:]))),
    # Runner::with_builder(b) -> b.runner()
    (re.compile(r"(?<![A-Za-z0-9_.])(?:evloop::(?:task::)?)?Runner::with_builder\("),
     lambda a: "%s.runner()" % a[0].strip()),
]


def rewrite_calls(text):
    for rx, fn in CALLS:
        out = []
        i = 0
        while True:
            m = rx.search(text, i)
            if not m:
                out.append(text[i:])
                break
            try:
                args, end = split_args(text, m.end())
            except ValueError:
                out.append(text[i:m.end()])
                i = m.end()
                continue
            out.append(text[i:m.start()])
            # arguments over several lines (of a doc comment too) become one line
            args = [re.sub(r"\s*\n\s*(?://[/!])?\s*", " ", x).strip().rstrip(",") for x in args]
            args = [x for x in args if x]
            if fn is None:
                # `lp.open_connection(` -> `evloop::streams::open_connection(`, arguments kept
                name = m.group(1)
                out.append("evloop::streams::%s(%s)" % (name, ", ".join(args)))
                if m.group(0).rstrip("(").endswith("_with"):
                    out[-1] = with_options("evloop::streams::" + name, len(args) - 1)(args)
                i = end
                continue
            out.append(fn(args))
            i = end
        text = "".join(out)
    return text


# Method renames (getters, addresses): `.old(` -> `.new(`.
METHODS = {
    "get_exception_handler": "exception_handler",
    "get_debug": "debug",
    "get_loop": "event_loop",
    "get_write_buffer_size": "write_buffer_size",
    "get_write_buffer_limits": "write_buffer_limits",
    "get_write_queue_limit": "write_queue_limit",
    "sockname": "local_addr",
    "peername": "peer_addr",
}


def rewrite_methods(text):
    for old, new in METHODS.items():
        text = re.sub(r"\.%s\(" % old, "." + new + "(", text)
        text = re.sub(r"::%s\b" % old, "::" + new, text)  # UFCS and doc links
    return text


# ---- glob imports: `use evloop::*;` -> the names the file uses ------------------------------------

GLOB_RE = re.compile(r"^([ \t]*)use evloop::\*;[ \t]*$", re.M)


def rewrite_glob(text):
    m = GLOB_RE.search(text)
    if not m:
        return text
    code = re.sub(r"//[^\n]*", "", text)
    code = re.sub(r'"(?:\\.|[^"\\])*"', '""', code)
    used = []
    for w in re.finditer(r"(?<![.:A-Za-z0-9_])([A-Za-z_][A-Za-z0-9_]*)(?![A-Za-z0-9_])(\s*!)?", code):
        name = w.group(1)
        if w.group(2):
            continue  # a macro call: the macros stay at the root, `evloop::select!` by path
        if (name in MOD or name in ("run", "spawn")) and name not in used:
            # a name the file imports from elsewhere shadows the glob: not evloop's
            if re.search(r"\buse\b[^;]*\b%s\b" % name, code[:m.start()] + code[m.end():]):
                continue
            used.append(name)
    # The glob brought the I/O traits too: keep them through the prelude where their methods are called.
    trait_methods = ("read", "read_exact", "read_to_end", "read_to_string", "read_buf", "write", "write_all",
                     "write_vectored", "flush", "shutdown", "read_line", "read_until", "lines", "fill_buf",
                     "consume", "split")
    lines = []
    if any(re.search(r"\.%s\(" % n, code) for n in trait_methods):
        lines.append("use evloop::prelude::*;")
    if used:
        lines.append("use evloop::" + build([(map_path([n]), None) for n in used]) + ";")
    if not lines:
        return text[:m.start()] + text[m.end() + 1:]
    return text[:m.start()] + ("\n" + m.group(1)).join(m.group(1) + l if k == 0 else l for k, l in enumerate(lines)) + text[m.end():]


def main():
    for path in sys.argv[1:]:
        with open(path) as f:
            text = f.read()
        new = rewrite_glob(text)
        new = rewrite_uses(new)
        new = rewrite_inline(new)
        new = rewrite_calls(new)
        new = rewrite_methods(new)
        if path.endswith(".rs") and "runtime/src/" in path:
            new = rewrite_doc_links(new)
        if new != text:
            with open(path, "w") as f:
                f.write(new)
            print(path)


if __name__ == "__main__":
    main()
