//! `#[evloop::main]` and `#[evloop::test]`: an `async fn` run on a new evloop event loop
//! (re-exported by the `evloop` crate; depend on `evloop`, not on this crate).
//!
//! This crate has no dependencies at all: no `syn`, no `quote`. The attribute reads the
//! function from the raw token stream (outer attributes, visibility, `async fn`, name, an empty
//! parameter list, an optional return type, the body) and writes the new function as tokens,
//! keeping the user's own tokens (and so their spans, for error messages) wherever it can:
//!
//! ```text
//! #[evloop::main(trace)]                 fn main() -> R {
//! async fn main() -> R { BODY }    =>        let body = async move { BODY };
//!                                            match ::evloop::event_loop::Builder::new().trace(true).run(body) {
//!                                                Ok(v) => v,
//!                                                Err(e) => resume the task's panic, or panic with e,
//!                                            }
//!                                        }
//! ```
//!
//! `Builder::run` is `asyncio.run`: a fresh loop, the body as its main task, leftover tasks
//! cancelled, the loop closed. A panic in the body resumes as the same panic (so
//! `#[should_panic(expected = ...)]` works in tests); a loop that cannot start panics with the
//! OS error. Misuse is a compile error pointing at the problem: a function that is not
//! `async`, has generics, an unknown option, or parameters where none can be passed (`main`
//! and tests; a method such as `async fn run(self)` keeps its parameters, moved into the body).
//!
//! Options, comma-separated: `trace` (print every loop phase, task step and wake, as
//! `EVLOOP_TRACE=1` does), `virtual_clock` (time moves only when the loop is idle, jumping to
//! the next timer: an hour of sleeps runs at once, deterministically), for tests `simulate`
//! (the body runs on the simulated kernel once per seed, see [`macro@test`]),
//! `crate = "path"` (where the `evloop` crate is, if it was renamed), and tokio's
//! `flavor = "current_thread"`, accepted so that a tokio program's attribute ports unchanged
//! (evloop's loop is always one thread; `"multi_thread"` is a compile error saying so), and
//! `loops = N`: the body runs on loop 0 of an `evloop::runtime` of N loops, one thread each
//! (`Runtime::block_on`; `main` also stops it on SIGINT/SIGTERM), so the body must be `Send`
//! to build and its output `Send`.

#![forbid(unsafe_code)]
#![deny(missing_docs)]

use proc_macro::{Delimiter, Group, Ident, Literal, Punct, Spacing, Span, TokenStream, TokenTree};

/// Runs an `async fn main` on a new evloop event loop (`asyncio.run(main())`).
///
/// ```text
/// #[evloop::main]
/// async fn main() -> std::io::Result<()> {
///     let listener = evloop::net::TcpListener::bind("127.0.0.1:8080").await?;
///     // ...
///     Ok(())
/// }
/// ```
///
/// Options: `#[evloop::main(trace)]`, `#[evloop::main(virtual_clock)]` (tokio's
/// `start_paused = true` is accepted as the same), separated by commas, and `crate = "path"`. `#[evloop::main(loops = 4)]` runs the body on loop 0 of a
/// multi-loop runtime (`evloop::runtime`, one loop per thread; SIGINT/SIGTERM stop it
/// gracefully), where it can reach the other loops through `evloop::runtime::Context`. The return type is the function's own: `()`, a `Result`, or
/// anything `main` may return. A panic in the body ends the program as a panic in a plain
/// `main` would (exit code 101); a loop that cannot be created (out of file descriptors)
/// panics with the OS error. On another function or a method (`async fn run(self) -> T` in an
/// `impl`), the parameters stay and the body moves them in: `app.run()` runs it on a new loop.
#[proc_macro_attribute]
pub fn main(args: TokenStream, item: TokenStream) -> TokenStream {
    expand(Kind::Main, args, item)
}

/// Runs an `async fn` test on a new evloop event loop, one loop per test.
///
/// ```text
/// #[evloop::test(virtual_clock)]
/// async fn an_hour_of_timers_runs_at_once() {
///     evloop::time::sleep(std::time::Duration::from_secs(3600)).await;
/// }
/// ```
///
/// The test's other attributes (`#[should_panic]`, `#[ignore]`) are kept, and a panic keeps its
/// payload, so `#[should_panic(expected = "...")]` matches the body's own message. Options as
/// for [`macro@main`]: `trace`, `virtual_clock` (or tokio's `start_paused = true`), `crate = "path"`.
///
/// On a function that is not `async`, with no options, it is the built-in `#[test]`, so a file
/// that imports it (`use evloop::test;`) keeps its ordinary `#[test] fn`s.
///
/// # Simulation
///
/// `#[evloop::test(simulate)]` runs the body on evloop's simulated kernel (`evloop::sys::sim`,
/// evloop's `simulation` feature), once per seed: 100 seeds by default,
/// `simulate(seeds = 1000)` for more, and `simulate(faults)` to let each seed also draw a fault
/// profile (resets, short writes, failed accepts, ...; without it only the order of events,
/// latencies and thread interleavings vary). The first seed runs twice and must leave the same
/// trace (a test driven by something outside the simulation, such as the executor or a thread
/// that did not enter the kernel, fails this check). A failing seed is shrunk to a simple
/// schedule and reported on stderr with its trace and the commands that replay it
/// (`EVLOOP_SEED=n`, `EVLOOP_TAPE='...'`); the test then fails with the body's own panic.
///
/// ```text
/// #[evloop::test(simulate(seeds = 1000))]
/// async fn echo_survives_every_interleaving() {
///     let listener = evloop::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
///     // ...
/// }
/// ```
///
/// As with tokio's `#[tokio::test]`, a glob import of the crate root (`use evloop::*;`) brings
/// this attribute and makes the built-in `#[test]` in that file ambiguous (a glob-imported macro
/// may not hide a prelude macro): glob-import `evloop::prelude::*` instead (the I/O traits only,
/// safe with `#[test]`), and write `#[evloop::test]` by path.
#[proc_macro_attribute]
pub fn test(args: TokenStream, item: TokenStream) -> TokenStream {
    if args.is_empty() && !is_async_fn(&item) {
        let mut out = parse("#[::core::prelude::v1::test]");
        out.extend(item);
        return out;
    }
    expand(Kind::Test, args, item)
}

/// Not for direct use: the `#[test]` of a test binary that runs plain (not `async`) tests a
/// second time on evloop's simulated kernel (the behaviour-contract suites in
/// `tests/tests/sim/contracts.rs`, which import it as `test`). `fn name() { BODY }` becomes a
/// built-in `#[test]` whose body is `crate::run_on_simulated_kernel("path::name", || BODY)`:
/// the crate root provides that function (it runs the body under the simulation driver, or
/// says why the test needs the real kernel). Other attributes are kept.
#[doc(hidden)]
#[proc_macro_attribute]
pub fn simulated_test(args: TokenStream, item: TokenStream) -> TokenStream {
    if !args.is_empty() {
        return Error::new(Span::call_site(), "`simulated_test` takes no arguments").into_tokens();
    }
    let mut tokens: Vec<TokenTree> = item.into_iter().collect();
    let name = tokens.windows(2).find_map(|w| match (&w[0], &w[1]) {
        (TokenTree::Ident(f), TokenTree::Ident(n)) if f.to_string() == "fn" => Some(n.to_string()),
        _ => None,
    });
    let body = match tokens.pop() {
        Some(TokenTree::Group(g)) if g.delimiter() == Delimiter::Brace => g,
        _ => return Error::new(Span::call_site(), "`simulated_test` goes on a `fn` with a body").into_tokens(),
    };
    let Some(name) = name else {
        return Error::new(Span::call_site(), "`simulated_test` goes on a `fn`").into_tokens();
    };
    // `crate::run_on_simulated_kernel("module::path::name", || BODY)`
    let mut args = parse(&format!("::core::concat!(::core::module_path!(), \"::{name}\"), ||"));
    args.extend([TokenTree::Group(body.clone())]);
    let mut call = parse("crate::run_on_simulated_kernel");
    call.extend([TokenTree::Group(Group::new(Delimiter::Parenthesis, args))]);
    let mut out = parse("#[::core::prelude::v1::test]");
    out.extend(tokens);
    let mut new_body = Group::new(Delimiter::Brace, call);
    new_body.set_span(body.span());
    out.extend([TokenTree::Group(new_body)]);
    out
}

/// Whether the item is an `async fn` (the keyword comes before `fn`, after any attributes).
fn is_async_fn(item: &TokenStream) -> bool {
    for tt in item.clone() {
        if let TokenTree::Ident(id) = tt {
            match id.to_string().as_str() {
                "async" => return true,
                "fn" => return false,
                _ => {}
            }
        }
    }
    false
}

#[derive(Clone, Copy, PartialEq)]
enum Kind {
    Main,
    Test,
}

impl Kind {
    fn attribute(self) -> &'static str {
        match self {
            Kind::Main => "#[evloop::main]",
            Kind::Test => "#[evloop::test]",
        }
    }
}

/// A compile error at `span`, as the tokens `::core::compile_error! { "message" }`.
struct Error {
    span: Span,
    message: String,
}

impl Error {
    fn new(span: Span, message: impl Into<String>) -> Error {
        Error {
            span,
            message: message.into(),
        }
    }

    fn into_tokens(self) -> TokenStream {
        let span = self.span;
        let punct = |c: char, spacing: Spacing| {
            let mut p = Punct::new(c, spacing);
            p.set_span(span);
            TokenTree::Punct(p)
        };
        let mut msg = Literal::string(&self.message);
        msg.set_span(span);
        let mut body = Group::new(Delimiter::Brace, TokenTree::Literal(msg).into());
        body.set_span(span);
        TokenStream::from_iter([
            punct(':', Spacing::Joint),
            punct(':', Spacing::Alone),
            TokenTree::Ident(Ident::new("core", span)),
            punct(':', Spacing::Joint),
            punct(':', Spacing::Alone),
            TokenTree::Ident(Ident::new("compile_error", span)),
            punct('!', Spacing::Alone),
            TokenTree::Group(body),
        ])
    }
}

/// What the options asked for.
struct Options {
    trace: bool,
    virtual_clock: bool,
    krate: String,
    simulate: Option<Simulate>,
    /// `loops = N`: the body runs on loop 0 of an `evloop::runtime` of N loops.
    loops: Option<u64>,
}

/// `simulate(seeds = N, faults)`: run the test on a simulated kernel, once per seed.
struct Simulate {
    seeds: u64,
    faults: bool,
}

/// Seeds a `simulate` test runs when it does not say.
const DEFAULT_SEEDS: u64 = 100;

fn parse_simulate(group: Option<&Group>) -> Result<Simulate, Error> {
    let mut sim = Simulate {
        seeds: DEFAULT_SEEDS,
        faults: false,
    };
    let Some(group) = group else {
        return Ok(sim);
    };
    let expected = "expected `seeds = N` or `faults` in `simulate(...)`";
    let tokens: Vec<TokenTree> = group.stream().into_iter().collect();
    let mut i = 0;
    while i < tokens.len() {
        match &tokens[i] {
            TokenTree::Ident(id) if id.to_string() == "faults" => sim.faults = true,
            TokenTree::Ident(id) if id.to_string() == "seeds" => {
                let eq = matches!(tokens.get(i + 1), Some(TokenTree::Punct(p)) if p.as_char() == '=');
                let n = match tokens.get(i + 2) {
                    Some(TokenTree::Literal(lit)) if eq => lit.to_string().replace('_', "").parse::<u64>().ok(),
                    _ => None,
                };
                match n {
                    Some(n) if n > 0 => sim.seeds = n,
                    _ => return Err(Error::new(id.span(), "`seeds` takes a positive number: `seeds = 1000`")),
                }
                i += 2;
            }
            other => return Err(Error::new(other.span(), expected)),
        }
        i += 1;
        match tokens.get(i) {
            None => {}
            Some(TokenTree::Punct(p)) if p.as_char() == ',' => i += 1,
            Some(other) => return Err(Error::new(other.span(), expected)),
        }
    }
    Ok(sim)
}

fn parse_options(args: TokenStream, kind: Kind) -> Result<Options, Error> {
    let mut opts = Options {
        trace: false,
        virtual_clock: false,
        krate: "::evloop".to_string(),
        simulate: None,
        loops: None,
    };
    let tokens: Vec<TokenTree> = args.into_iter().collect();
    let expected = "expected `trace`, `virtual_clock`, `start_paused = true`, `simulate`, `loops = N`, `crate = \"path\"` or `flavor = \"current_thread\"`";
    let mut i = 0;
    while i < tokens.len() {
        match &tokens[i] {
            TokenTree::Ident(id) => {
                let name = id.to_string();
                match name.as_str() {
                    "trace" if !opts.trace => opts.trace = true,
                    "virtual_clock" if !opts.virtual_clock => opts.virtual_clock = true,
                    "trace" | "virtual_clock" => {
                        return Err(Error::new(id.span(), format!("the option `{name}` is given twice")));
                    }
                    "simulate" if kind == Kind::Main => {
                        return Err(Error::new(
                            id.span(),
                            "`simulate` is a test option: `#[evloop::test(simulate)]`",
                        ));
                    }
                    "simulate" if opts.simulate.is_some() => {
                        return Err(Error::new(id.span(), "the option `simulate` is given twice"));
                    }
                    "simulate" => {
                        let group = match tokens.get(i + 1) {
                            Some(TokenTree::Group(g)) if g.delimiter() == Delimiter::Parenthesis => {
                                i += 1;
                                Some(g)
                            }
                            _ => None,
                        };
                        opts.simulate = Some(parse_simulate(group)?);
                    }
                    "flavor" => {
                        // tokio's option, accepted so that tokio code ports unchanged: evloop's
                        // loop is always one thread, which is tokio's `current_thread`.
                        let eq = matches!(tokens.get(i + 1), Some(TokenTree::Punct(p)) if p.as_char() == '=');
                        match tokens.get(i + 2) {
                            Some(TokenTree::Literal(lit))
                                if eq && string_literal(lit).as_deref() == Some("current_thread") => {}
                            Some(TokenTree::Literal(lit))
                                if eq && string_literal(lit).as_deref() == Some("multi_thread") =>
                            {
                                return Err(Error::new(
                                    lit.span(),
                                    "evloop runs one event loop per thread: only `flavor = \"current_thread\"` is available",
                                ));
                            }
                            _ => {
                                return Err(Error::new(
                                    id.span(),
                                    "`flavor` takes \"current_thread\" (evloop's only flavor)",
                                ));
                            }
                        }
                        i += 2;
                    }
                    "start_paused" => {
                        // tokio's option: the loop starts with its clock paused, which is evloop's
                        // virtual clock (time moves when the loop is idle or is `advance`d).
                        let eq = matches!(tokens.get(i + 1), Some(TokenTree::Punct(p)) if p.as_char() == '=');
                        let on = match tokens.get(i + 2) {
                            Some(TokenTree::Ident(b)) if eq && b.to_string() == "true" => true,
                            Some(TokenTree::Ident(b)) if eq && b.to_string() == "false" => false,
                            _ => {
                                return Err(Error::new(id.span(), "`start_paused` takes `true` or `false`"));
                            }
                        };
                        if on && opts.virtual_clock {
                            return Err(Error::new(
                                id.span(),
                                "`start_paused = true` and `virtual_clock` are the same option: give one",
                            ));
                        }
                        opts.virtual_clock |= on;
                        i += 2;
                    }
                    "loops" if opts.loops.is_some() => {
                        return Err(Error::new(id.span(), "the option `loops` is given twice"));
                    }
                    "loops" => {
                        let eq = matches!(tokens.get(i + 1), Some(TokenTree::Punct(p)) if p.as_char() == '=');
                        let n = match tokens.get(i + 2) {
                            Some(TokenTree::Literal(lit)) if eq => lit.to_string().replace('_', "").parse::<u64>().ok(),
                            _ => None,
                        };
                        match n {
                            Some(n) if n > 0 => opts.loops = Some(n),
                            _ => return Err(Error::new(id.span(), "`loops` takes a positive number: `loops = 2`")),
                        }
                        i += 2;
                    }
                    "crate" => {
                        let eq = matches!(tokens.get(i + 1), Some(TokenTree::Punct(p)) if p.as_char() == '=');
                        let path = match tokens.get(i + 2) {
                            Some(TokenTree::Literal(lit)) if eq => string_literal(lit),
                            _ => None,
                        };
                        match path {
                            Some(p) if !p.is_empty() => opts.krate = p,
                            _ => {
                                return Err(Error::new(
                                    id.span(),
                                    "`crate` takes a path as a string: `crate = \"my_evloop\"`",
                                ));
                            }
                        }
                        i += 2;
                    }
                    _ => {
                        return Err(Error::new(
                            id.span(),
                            format!("unknown option `{name}` for {}: {expected}", kind.attribute()),
                        ));
                    }
                }
            }
            other => {
                return Err(Error::new(
                    other.span(),
                    format!("unexpected `{other}` in {}'s options: {expected}", kind.attribute()),
                ));
            }
        }
        i += 1;
        match tokens.get(i) {
            None => {}
            Some(TokenTree::Punct(p)) if p.as_char() == ',' => i += 1,
            Some(other) => {
                return Err(Error::new(
                    other.span(),
                    format!("expected `,` between {}'s options", kind.attribute()),
                ));
            }
        }
    }
    Ok(opts)
}

/// The text of a plain string literal (`"a::b"`), `None` for anything else.
fn string_literal(lit: &Literal) -> Option<String> {
    let s = lit.to_string();
    let inner = s.strip_prefix('"')?.strip_suffix('"')?;
    if inner.contains('\\') || inner.contains('"') {
        return None;
    }
    Some(inner.to_string())
}

/// The function, taken apart.
struct Function {
    /// Outer attributes (`#[...]`, doc comments), in order.
    attrs: Vec<TokenTree>,
    /// `pub`, `pub(crate)`, ... (may be empty).
    vis: Vec<TokenTree>,
    fn_token: Ident,
    name: Ident,
    /// The parameters, kept for a method or helper (`self`, ...); empty for `main` and tests.
    params: TokenStream,
    /// The tokens after `->`, up to the body (empty for `()`).
    ret: Vec<TokenTree>,
    body: Group,
}

fn parse_function(item: TokenStream, kind: Kind) -> Result<Function, Error> {
    let tokens: Vec<TokenTree> = item.into_iter().collect();
    let mut i = 0;
    let mut attrs = Vec::new();
    // Outer attributes: `#` followed by a bracketed group.
    while let (Some(TokenTree::Punct(p)), Some(TokenTree::Group(g))) = (tokens.get(i), tokens.get(i + 1)) {
        if p.as_char() != '#' || g.delimiter() != Delimiter::Bracket {
            break;
        }
        attrs.push(tokens[i].clone());
        attrs.push(tokens[i + 1].clone());
        i += 2;
    }
    let mut vis = Vec::new();
    if let Some(TokenTree::Ident(id)) = tokens.get(i) {
        if id.to_string() == "pub" {
            vis.push(tokens[i].clone());
            i += 1;
            if let Some(TokenTree::Group(g)) = tokens.get(i) {
                if g.delimiter() == Delimiter::Parenthesis {
                    vis.push(tokens[i].clone());
                    i += 1;
                }
            }
        }
    }
    // Qualifiers up to `fn`.
    let mut is_async = false;
    let fn_token = loop {
        match tokens.get(i) {
            Some(TokenTree::Ident(id)) => {
                let word = id.to_string();
                match word.as_str() {
                    "fn" => break id.clone(),
                    "async" => is_async = true,
                    "const" | "unsafe" | "extern" => {
                        return Err(Error::new(
                            id.span(),
                            format!("{} does not take `{word}` functions", kind.attribute()),
                        ));
                    }
                    _ => {
                        return Err(Error::new(
                            id.span(),
                            format!("{} goes on an `async fn`", kind.attribute()),
                        ));
                    }
                }
                i += 1;
            }
            // `extern "C"`'s ABI string, or anything else before `fn`.
            Some(other) => {
                return Err(Error::new(
                    other.span(),
                    format!("{} goes on an `async fn`", kind.attribute()),
                ));
            }
            None => {
                return Err(Error::new(
                    Span::call_site(),
                    format!("{} goes on an `async fn`", kind.attribute()),
                ));
            }
        }
    };
    i += 1;
    if !is_async {
        return Err(Error::new(
            fn_token.span(),
            format!(
                "the `async` keyword is missing from the function declaration: {} runs an `async fn`",
                kind.attribute()
            ),
        ));
    }
    let name = match tokens.get(i) {
        Some(TokenTree::Ident(id)) => id.clone(),
        _ => return Err(Error::new(fn_token.span(), "expected the function's name after `fn`")),
    };
    i += 1;
    match tokens.get(i) {
        Some(TokenTree::Punct(p)) if p.as_char() == '<' => {
            return Err(Error::new(
                p.span(),
                format!("{} functions cannot be generic", kind.attribute()),
            ));
        }
        Some(TokenTree::Group(g)) if g.delimiter() == Delimiter::Parenthesis => {
            // `#[evloop::main]` on a method or helper (`async fn run(self)`) keeps its
            // parameters: the body moves them in, as tokio's attribute does. Only a test and the
            // program's own `main` are called with no arguments.
            let called_with_none = kind == Kind::Test || name.to_string() == "main";
            if called_with_none && !g.stream().is_empty() {
                let what = match kind {
                    Kind::Main => "the main function cannot take arguments",
                    Kind::Test => "test functions cannot take arguments",
                };
                return Err(Error::new(
                    g.span(),
                    format!("{what} ({} calls it with none)", kind.attribute()),
                ));
            }
        }
        Some(other) => return Err(Error::new(other.span(), "expected `(` after the function's name")),
        None => return Err(Error::new(name.span(), "expected `(` after the function's name")),
    }
    let params = match tokens.get(i) {
        Some(TokenTree::Group(g)) => g.stream(),
        _ => TokenStream::new(),
    };
    i += 1;
    let mut ret = Vec::new();
    if let Some(TokenTree::Punct(p)) = tokens.get(i) {
        if p.as_char() == '-' && p.spacing() == Spacing::Joint {
            match tokens.get(i + 1) {
                Some(TokenTree::Punct(gt)) if gt.as_char() == '>' => i += 2,
                _ => return Err(Error::new(p.span(), "expected `->` before the return type")),
            }
            while let Some(t) = tokens.get(i) {
                if let TokenTree::Group(g) = t {
                    if g.delimiter() == Delimiter::Brace && i + 1 == tokens.len() {
                        break;
                    }
                }
                if let TokenTree::Ident(id) = t {
                    if id.to_string() == "where" {
                        return Err(Error::new(
                            id.span(),
                            format!("{} functions cannot have a `where` clause", kind.attribute()),
                        ));
                    }
                }
                ret.push(t.clone());
                i += 1;
            }
            if ret.is_empty() {
                return Err(Error::new(p.span(), "expected a return type after `->`"));
            }
        }
    }
    if let Some(TokenTree::Ident(id)) = tokens.get(i) {
        if id.to_string() == "where" {
            return Err(Error::new(
                id.span(),
                format!("{} functions cannot have a `where` clause", kind.attribute()),
            ));
        }
    }
    let body = match tokens.get(i) {
        Some(TokenTree::Group(g)) if g.delimiter() == Delimiter::Brace && i + 1 == tokens.len() => g.clone(),
        Some(other) => return Err(Error::new(other.span(), "expected the function's body")),
        None => return Err(Error::new(name.span(), "expected the function's body")),
    };
    Ok(Function {
        attrs,
        vis,
        fn_token,
        name,
        params,
        ret,
        body,
    })
}

fn parse(text: &str) -> TokenStream {
    match text.parse() {
        Ok(ts) => ts,
        // The text is this crate's own and always parses; an error here is a bug in it, shown
        // to the user as a compile error rather than a proc-macro panic.
        Err(_) => Error::new(Span::call_site(), format!("evloop-macros: cannot parse `{text}`")).into_tokens(),
    }
}

fn expand(kind: Kind, args: TokenStream, item: TokenStream) -> TokenStream {
    let original = item.clone();
    let result = parse_options(args, kind).and_then(|opts| parse_function(item, kind).map(|f| (opts, f)));
    let (opts, f) = match result {
        Ok(v) => v,
        Err(e) => {
            // The error, and an empty `fn main` when that is what failed, so that no second
            // error ("`main` function not found") buries the first.
            let mut out = e.into_tokens();
            if kind == Kind::Main && names_main(original) {
                out.extend(parse("fn main() {}"));
            }
            return out;
        }
    };
    let krate = &opts.krate;
    if let Some(loops) = opts.loops {
        if opts.virtual_clock || opts.simulate.is_some() {
            return Error::new(
                Span::call_site(),
                "`loops = N` runs real threads: it cannot be combined with `virtual_clock` or `simulate`",
            )
            .into_tokens();
        }
        return expand_loops(kind, &opts, loops, f);
    }
    let mut builder = format!("{krate}::event_loop::Builder::new()");
    if opts.trace {
        builder.push_str(".trace(true)");
    }
    if opts.virtual_clock {
        builder.push_str(".virtual_clock(true)");
    }
    let label = match kind {
        Kind::Main => "evloop::main",
        Kind::Test => "evloop::test",
    };
    let mut body = parse("let __evloop_body = async move");
    body.extend([TokenTree::Group(f.body.clone())]);
    body.extend(parse(&format!(
        "; match {builder}.run(__evloop_body) {{
            ::core::result::Result::Ok(__evloop_value) => __evloop_value,
            ::core::result::Result::Err(__evloop_error) => {{
                let __evloop_message = ::std::format!(\"{label}: {{}}\", __evloop_error);
                if let {krate}::task::RunError::Task(__evloop_task) = __evloop_error {{
                    if let ::core::option::Option::Some(mut __evloop_panic) = __evloop_task.into_panic() {{
                        if let ::core::option::Option::Some(__evloop_payload) = __evloop_panic.take_payload() {{
                            ::std::panic::resume_unwind(__evloop_payload);
                        }}
                    }}
                }}
                ::core::panic!(\"{{}}\", __evloop_message)
            }}
        }}"
    )));
    if let Some(sim) = &opts.simulate {
        // `simulate`: the loop runs inside the simulation driver, once per seed.
        let mut closure_body = Group::new(Delimiter::Brace, body);
        closure_body.set_span(f.body.span());
        let mut args = parse(&format!(
            "{krate}::sys::sim::TestOptions {{
                name: ::core::concat!(::core::module_path!(), \"::\", \"{}\"),
                seeds: {},
                faults: {},
            }}, ||",
            f.name, sim.seeds, sim.faults
        ));
        args.extend([TokenTree::Group(closure_body)]);
        body = parse(&format!("{krate}::sys::sim::__run_test"));
        body.extend([TokenTree::Group(Group::new(Delimiter::Parenthesis, args))]);
    }
    emit(kind, f, body)
}

/// `loops = N`: the body, built by a `Send` closure, runs on loop 0 of a multi-loop runtime
/// (`Runtime::block_on`); `main` also stops the runtime gracefully on SIGINT/SIGTERM. A loop's
/// panic resumes as that panic; any other failure panics with the runtime's error.
fn expand_loops(kind: Kind, opts: &Options, loops: u64, f: Function) -> TokenStream {
    let krate = &opts.krate;
    let mut builder = format!("{krate}::runtime::Builder::new().loops({loops})");
    if opts.trace {
        builder.push_str(".trace(true)");
    }
    if kind == Kind::Main {
        builder.push_str(".shutdown_on_signals(true)");
    }
    let label = match kind {
        Kind::Main => "evloop::main",
        Kind::Test => "evloop::test",
    };
    let mut body = parse("let __evloop_body = move || async move");
    body.extend([TokenTree::Group(f.body.clone())]);
    body.extend(parse(&format!(
        "; match {builder}.build().and_then(|__evloop_rt| __evloop_rt.block_on(__evloop_body)) {{
            ::core::result::Result::Ok(__evloop_value) => __evloop_value,
            ::core::result::Result::Err(__evloop_error) => {{
                let __evloop_message = ::std::format!(\"{label}: {{}}\", __evloop_error);
                for __evloop_failure in __evloop_error.into_failures() {{
                    if let {krate}::runtime::Failure::Panic(mut __evloop_panic) = __evloop_failure.into_kind() {{
                        if let ::core::option::Option::Some(__evloop_payload) = __evloop_panic.take_payload() {{
                            ::std::panic::resume_unwind(__evloop_payload);
                        }}
                    }}
                }}
                ::core::panic!(\"{{}}\", __evloop_message)
            }}
        }}"
    )));
    emit(kind, f, body)
}

/// The function again, its body replaced by `body` (and `#[test]` in front for a test).
fn emit(kind: Kind, f: Function, body: TokenStream) -> TokenStream {
    let mut out = TokenStream::new();
    if kind == Kind::Test {
        out.extend(parse("#[::core::prelude::v1::test]"));
    }
    out.extend(f.attrs);
    out.extend(f.vis);
    out.extend([TokenTree::Ident(f.fn_token), TokenTree::Ident(f.name)]);
    out.extend([TokenTree::Group(Group::new(Delimiter::Parenthesis, f.params))]);
    if !f.ret.is_empty() {
        out.extend(parse("->"));
        out.extend(f.ret);
    }
    let mut group = Group::new(Delimiter::Brace, body);
    group.set_span(f.body.span());
    out.extend([TokenTree::Group(group)]);
    out
}

/// Whether the item is a function named `main`.
fn names_main(item: TokenStream) -> bool {
    let tokens: Vec<TokenTree> = item.into_iter().collect();
    tokens.windows(2).any(|w| match (&w[0], &w[1]) {
        (TokenTree::Ident(f), TokenTree::Ident(n)) => f.to_string() == "fn" && n.to_string() == "main",
        _ => false,
    })
}
