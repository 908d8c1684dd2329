//! The register switch: the only code of the runtime crate that is `unsafe`, besides the raw
//! task cell.
//!
//! A fiber is a stack plus the registers that say where on it execution stopped. Switching
//! from fiber A to fiber B is: push the registers the calling convention says a function must
//! preserve (callee-saved) onto A's stack, store A's stack pointer, load B's stack pointer, pop
//! B's callee-saved registers, return. The `ret` lands wherever B called the switch from, with
//! B's registers as B left them: to B, the switch was an ordinary function call that took a
//! while. Everything else (caller-saved registers, flags, vector registers beyond the
//! callee-saved ones) the compiler already assumes a call destroys, so the switch does not save
//! it: 6 general-purpose registers, the stack pointer and the two floating-point control words
//! on x86_64; 12 general-purpose registers, the stack pointer and 8 half vector registers on
//! aarch64. That cannot be written in Rust (a function cannot change its own stack pointer and
//! return somewhere else), hence the assembly and the `unsafe`.
//!
//! A fiber that has never run has nothing saved yet, so [`Context::give_stack`] writes a first
//! frame by hand at the top of its stack: zeroed registers, two of them holding the address of
//! the [`Context`] and of [`fiber_start`], and as return address a three-instruction trampoline
//! that calls `fiber_start(arg, context)`. The first switch into the fiber "returns" into the
//! trampoline.
//!
//! # The fiber's state
//! [`State`] is the one state of a fiber: the fiber layer above reads it from the context and
//! never keeps a copy. Only this module changes it, each change at the switch that makes it
//! true:
//! ```text
//! Fresh ──first switch to it────► Running      switch (`to` must have its stack by then)
//! Running ──switch away─────────► Suspended    switch (`from`)
//! Suspended ──switch to it──────► Running      switch (`to`)
//! Running ──its last switch─────► Dead         exit (the entry function returned)
//! Fresh ──given up, never run───► Dead         Context::abandon
//! ```
//!
//! # Ownership, which is what makes the safe API sound
//! * A [`Context`] owns its [`Stack`] (which owns its memory: see `stack.rs`), so no other code
//!   can write to the memory the frames live in, and the stack is freed only by the context.
//! * A started context that has not finished holds a strong reference to itself in its
//!   `fiber_start` frame: it cannot be dropped (and its stack cannot be freed) while frames live
//!   on it, whoever else lets go of it. `Drop` checks it anyway and aborts rather than free a
//!   stack with frames on it.
//! * A context finishes with [`Finish`]: its last references travel to the context it switches
//!   to (`grave`, `keep`), which drops them once it runs on its own stack. A stack is never
//!   freed by code running on it.
//! * Exactly one context per thread is `Running`: the thread's own ([`Context::for_thread`],
//!   created once per thread) at first, then whichever was switched to. [`switch`] checks that
//!   it switches from the running one to a fresh or suspended one; contexts cannot leave their
//!   thread (`Rc`, `Cell`).
//! * No panic crosses a switch: a panic unwinds the frames of the stack it started on, the
//!   trampoline's unwind information says it is the outermost frame, and [`fiber_start`] stops
//!   any panic that reaches it (the fiber layer catches them before) with an abort.
//!
//! # Valgrind
//! Valgrind tracks one stack per thread and takes a stack pointer that jumps into other memory
//! for a stack overflow unless it was told about the stack: each fiber stack is registered with
//! the `VALGRIND_STACK_REGISTER` client request, a magic instruction sequence that is a no-op
//! outside valgrind (a few rotations by a total of 128 bits).

use std::cell::{Cell, RefCell};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::rc::Rc;

use crate::fiber::stack::Stack;

/// What a fiber's entry function returns: the context to switch to for good, and the word it
/// receives as the return value of its own `switch` (or as `fiber_start`'s `arg`).
pub(crate) struct Finish {
    pub(crate) to: Rc<Context>,
    pub(crate) arg: usize,
}

/// A fiber's body as the switch sees it: gets the word the first switch passed, returns where to
/// go when it is done.
pub(crate) type Entry = fn(usize) -> Finish;

/// Where a fiber is in its life (see the module documentation for who changes it).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum State {
    /// Has never run: no stack yet, or a stack with a hand-made first frame.
    Fresh,
    /// Executing now (one per thread).
    Running,
    /// Stopped inside `switch`; its registers are saved on its stack.
    Suspended,
    /// Its entry function returned (its function returned, panicked or was thrown out) and it
    /// switched away for good, or it was abandoned before it ran.
    Dead,
}

/// An execution context: the thread's own stack, or a fiber stack with its saved registers.
pub(crate) struct Context {
    /// The saved stack pointer (valid while `Suspended`, or `Fresh` with a stack).
    sp: Cell<usize>,
    state: Cell<State>,
    /// `None` for the thread's own context, for a fresh fiber before `give_stack`, and for a
    /// dead fiber after its stack went back.
    stack: Cell<Option<Stack>>,
    entry: Option<Entry>,
    /// A context that finished by switching here; dropped (with its stack) when this one runs.
    grave: Cell<Option<Rc<Context>>>,
    /// This context itself, put here by whoever switched to it so that it stays alive during
    /// the jump; dropped when it runs.
    keep: Cell<Option<Rc<Context>>>,
    /// Valgrind's id for the stack (0 outside valgrind, or for the thread's context).
    valgrind_id: Cell<usize>,
}

thread_local! {
    /// The thread's own context, created once; this reference keeps it alive as long as the
    /// thread runs (a suspended thread context must outlive the switches away from it).
    static THREAD_CONTEXT: RefCell<Option<Rc<Context>>> = const { RefCell::new(None) };
    static THREAD_CONTEXT_MADE: Cell<bool> = const { Cell::new(false) };
}

impl Context {
    /// The calling thread's own context (running now), the first time it is asked for on this
    /// thread; `None` afterwards (or while the thread exits), so that there is only ever one.
    pub(crate) fn for_thread() -> Option<Rc<Context>> {
        if THREAD_CONTEXT_MADE.try_with(|m| m.replace(true)).unwrap_or(true) {
            return None;
        }
        let ctx = Rc::new(Context {
            sp: Cell::new(0),
            state: Cell::new(State::Running),
            stack: Cell::new(None),
            entry: None,
            grave: Cell::new(None),
            keep: Cell::new(None),
            valgrind_id: Cell::new(0),
        });
        THREAD_CONTEXT.try_with(|t| *t.borrow_mut() = Some(ctx.clone())).ok()?;
        Some(ctx)
    }

    /// A fresh context that runs `entry` when first switched to, once it has a stack
    /// ([`give_stack`](Context::give_stack): fibers get theirs at their first switch).
    pub(crate) fn new(entry: Entry) -> Rc<Context> {
        Rc::new(Context {
            sp: Cell::new(0),
            state: Cell::new(State::Fresh),
            stack: Cell::new(None),
            entry: Some(entry),
            grave: Cell::new(None),
            keep: Cell::new(None),
            valgrind_id: Cell::new(0),
        })
    }

    /// Gives a fresh context without a stack its stack, writing the first frame on it.
    pub(crate) fn give_stack(&self, stack: Stack) {
        if self.state.get() != State::Fresh || self.has_stack() || self.entry.is_none() {
            fatal("a stack given to a context that is not a fresh fiber without one");
        }
        let (lo, hi) = stack.bounds();
        if hi - lo < 4096 {
            fatal("a fiber stack is smaller than a page");
        }
        self.stack.set(Some(stack));
        self.valgrind_id.set(valgrind::stack_register(lo, hi));
        // SAFETY: `lo..hi` is the usable part of a stack this context now owns (mapped
        // read-write, owned by no one else: see `Stack::bounds`); the context is fresh, so no
        // frame lives there yet, and the frame written below the top fits (the stack is at
        // least a page). The address stored is this context's, inside the `Rc` that `new`
        // made (contexts exist only in one), which stays put while the `Rc` lives.
        let sp = unsafe { arch::initial_frame(hi, self as *const Context as usize) };
        self.sp.set(sp);
    }

    /// Whether it has a stack (a fresh fiber gets one at its first switch).
    pub(crate) fn has_stack(&self) -> bool {
        let stack = self.stack.take();
        let has = stack.is_some();
        self.stack.set(stack);
        has
    }

    /// The fiber's state: the only copy of it.
    #[inline]
    pub(crate) fn state(&self) -> State {
        self.state.get()
    }

    /// Fresh -> Dead: a fiber given up before it ran (thrown into, or its last handle dropped);
    /// its stack, if it got one, goes back now.
    pub(crate) fn abandon(&self) {
        if self.state.get() != State::Fresh {
            fatal("abandon of a context that has run");
        }
        self.state.set(State::Dead);
        self.release_stack();
    }

    /// Drops what a switch into this context left for it: a finished context (whose stack
    /// goes back to the pool now, on this stack) and the reference that kept it alive.
    #[inline(always)]
    fn bury(&self) {
        if let Some(dead) = self.grave.take() {
            bury_dead(dead);
        }
        if let Some(keep) = self.keep.take() {
            drop(keep);
        }
    }

    fn release_stack(&self) {
        let stack = self.stack.take();
        if stack.is_some() {
            valgrind::stack_deregister(self.valgrind_id.replace(0));
        }
        drop(stack);
    }
}

/// Gives a finished context's stack back and drops the reference it left (out of line: once
/// per fiber, not once per switch).
#[inline(never)]
fn bury_dead(dead: Rc<Context>) {
    dead.release_stack();
    drop(dead);
}

impl Drop for Context {
    fn drop(&mut self) {
        let live = matches!(self.state.get(), State::Running | State::Suspended);
        if live && self.entry.is_some() {
            // Unreachable: a started fiber holds a reference to its own context until it has
            // switched away for good. Freeing the stack under its frames would be worse.
            fatal("a fiber stack with live frames was about to be freed");
        }
        self.release_stack();
    }
}

/// Prints `what` and aborts: an invariant of this module broke, and continuing could corrupt
/// memory.
fn fatal(what: &str) -> ! {
    eprintln!("evloop: fatal error in the fiber switch: {what}");
    std::process::abort()
}

/// Switches from `from` (the context running now) to `to` (fresh or suspended), passing `arg`;
/// returns the word passed by whoever switches back to `from` later.
#[inline]
pub(crate) fn switch(from: &Context, to: &Rc<Context>, arg: usize) -> usize {
    if from.state.get() != State::Running {
        fatal("switch from a context that is not running");
    }
    if !matches!(to.state.get(), State::Fresh | State::Suspended) {
        fatal("switch to a context that is running or dead");
    }
    let fresh = to.state.get() == State::Fresh;
    if fresh && !to.has_stack() {
        fatal("switch to a fresh context that has no stack");
    }
    let to_sp = to.sp.get();
    from.state.set(State::Suspended);
    to.state.set(State::Running);
    // Once `to` runs, it must not depend on the caller's reference (the caller is suspended,
    // and whoever drops the last other reference could free it): a suspended `to` is held by
    // its own frames (its `fiber_start`, or for the thread's context the thread's reference); a
    // fresh one gets a reference in its own `keep` slot, which `fiber_start` takes as its own.
    if fresh {
        keep_self(to.clone());
    }
    // SAFETY: `to_sp` is the stack pointer `to` saved when it was suspended, or the one of the
    // first frame `Context::give_stack` wrote (a fresh `to` has its stack: checked above); its
    // stack is alive (owned by `to`, alive as explained above) and nothing has run on it since. `from.sp` is a live Cell of a context that stays
    // alive while suspended (its own frames or the thread's reference hold it). The switch
    // saves exactly the registers the calling convention makes callee-saved, which is all a
    // call is allowed to assume preserved.
    let ret = unsafe { arch::evloop_fiber_switch(arg, to_sp, from.sp.as_ptr()) };
    // Back on `from`'s stack: whoever switched here set `from` running.
    from.bury();
    ret
}

/// Puts a reference to `ctx` (the context about to run) into its own `keep` slot.
#[inline]
fn keep_self(ctx: Rc<Context>) {
    let keep = ctx.clone();
    ctx.keep.set(Some(keep));
}

/// Where a fiber starts: called by the trampoline, on the fiber's stack, with the word the
/// first switch passed and the address of the fiber's context. Never returns: the entry's
/// [`Finish`] says where to go.
extern "C" fn fiber_start(arg: usize, ctx: usize) -> ! {
    let ctx = ctx as *const Context;
    // SAFETY: `ctx` is the address `give_stack` wrote into this stack's first frame, of the
    // Rc'd context that owns this stack; the switch that started us put a strong reference to
    // it into its `keep` slot just before jumping, so it is alive, and only this thread uses it.
    let keep = unsafe { (*ctx).keep.take() };
    let Some(me) = keep else {
        fatal("a fiber started without its context");
    };
    me.bury();
    let Some(entry) = me.entry else {
        fatal("a fiber started without an entry function");
    };
    let finish = match catch_unwind(AssertUnwindSafe(|| entry(arg))) {
        Ok(f) => f,
        Err(_) => fatal("a panic reached the bottom of a fiber's stack"),
    };
    exit(me, finish)
}

/// The last switch of a fiber: `me` finishes and `finish.to` runs; `me`'s last references go
/// with it, to be dropped on the other stack.
fn exit(me: Rc<Context>, finish: Finish) -> ! {
    let Finish { to, arg } = finish;
    if !matches!(to.state.get(), State::Fresh | State::Suspended) {
        fatal("a finished fiber switches to a context that is running or dead");
    }
    if to.state.get() == State::Fresh && !to.has_stack() {
        fatal("a finished fiber switches to a fresh context that has no stack");
    }
    let to_sp = to.sp.get();
    me.state.set(State::Dead);
    to.state.set(State::Running);
    to.grave.set(Some(me));
    keep_self(to);
    // Where the switch stores this stack's pointer, which nobody will read again.
    let mut scratch = 0usize;
    // SAFETY: as in `switch`: `to_sp` is `to`'s saved stack pointer and `to` is alive through
    // its `keep` slot. This stack stays mapped until `to` drops the `grave` reference, which it
    // does only after the jump, on its own stack.
    unsafe { arch::evloop_fiber_switch(arg, to_sp, &mut scratch) };
    fatal("a finished fiber was resumed")
}

#[cfg(target_arch = "x86_64")]
mod arch {
    //! x86_64, System V ABI: callee-saved are rbx, rbp, r12-r15, rsp, and the control bits of
    //! MXCSR and the x87 control word.

    /// The value MXCSR has at process start (all exceptions masked, round to nearest).
    const MXCSR_DEFAULT: u64 = 0x1F80;
    /// The x87 control word at process start (extended precision, all exceptions masked).
    const FPUCW_DEFAULT: u64 = 0x037F;

    // `evloop_fiber_switch(arg: rdi, to_sp: rsi, save_sp: rdx) -> rax`
    //
    // Frame left on a suspended stack, from its saved stack pointer up:
    //   [sp+0]  MXCSR (4 bytes), x87 control word (2 bytes), padding
    //   [sp+8]  r15, r14, r13, r12, rbx, rbp
    //   [sp+56] return address (into the caller of the switch, or the trampoline)
    // At entry rsp is 8 mod 16 (the call pushed the return address); 6 pushes and the 8-byte
    // slot make the saved stack pointer 16-byte aligned.
    //
    // The trampoline is entered by the `ret` of the first switch into a fresh stack, with
    // rax = arg, r12 = the context, r13 = fiber_start; rsp is 16-byte aligned, as a `call`
    // needs. `.cfi_undefined rip` marks it as the outermost frame for unwinders and debuggers.
    std::arch::global_asm!(
        ".text",
        ".p2align 4",
        concat!(
            ".globl evloop_fiber_switch_",
            env!("CARGO_PKG_VERSION_MAJOR"),
            "_",
            env!("CARGO_PKG_VERSION_MINOR")
        ),
        concat!(
            ".hidden evloop_fiber_switch_",
            env!("CARGO_PKG_VERSION_MAJOR"),
            "_",
            env!("CARGO_PKG_VERSION_MINOR")
        ),
        concat!(
            ".type evloop_fiber_switch_",
            env!("CARGO_PKG_VERSION_MAJOR"),
            "_",
            env!("CARGO_PKG_VERSION_MINOR"),
            ",@function"
        ),
        concat!(
            "evloop_fiber_switch_",
            env!("CARGO_PKG_VERSION_MAJOR"),
            "_",
            env!("CARGO_PKG_VERSION_MINOR"),
            ":"
        ),
        "push rbp",
        "push rbx",
        "push r12",
        "push r13",
        "push r14",
        "push r15",
        "sub rsp, 8",
        "stmxcsr [rsp]",
        "fnstcw [rsp + 4]",
        "mov [rdx], rsp",
        // The live control words, to compare with the ones saved on the other stack.
        "mov r8d, [rsp]",
        "movzx r9d, word ptr [rsp + 4]",
        "mov rsp, rsi",
        // Loading MXCSR or the x87 control word costs tens of cycles (they serialise the
        // floating-point units), so load them only when the saved control bits differ from the
        // live ones (the MXCSR status flags, bits 0-5, are caller-saved).
        "mov r10d, [rsp]",
        "xor r10d, r8d",
        "test r10d, 0xffc0",
        "jz 2f",
        "ldmxcsr [rsp]",
        "2:",
        "cmp r9w, word ptr [rsp + 4]",
        "je 3f",
        "fldcw [rsp + 4]",
        "3:",
        "add rsp, 8",
        "pop r15",
        "pop r14",
        "pop r13",
        "pop r12",
        "pop rbx",
        "pop rbp",
        "mov rax, rdi",
        // `ret`, not `pop` + `jmp` (boost.context's choice): every switch is called from the
        // same call site, so the return address the return-stack predictor expects is the one
        // the other stack saved too, and the returns after it stay predicted. Measured: 19.0
        // against 24.8 ns per `Fiber::switch`.
        "ret",
        concat!(
            ".size evloop_fiber_switch_",
            env!("CARGO_PKG_VERSION_MAJOR"),
            "_",
            env!("CARGO_PKG_VERSION_MINOR"),
            ", . - evloop_fiber_switch_",
            env!("CARGO_PKG_VERSION_MAJOR"),
            "_",
            env!("CARGO_PKG_VERSION_MINOR")
        ),
        "",
        ".p2align 4",
        concat!(
            ".globl evloop_fiber_trampoline_",
            env!("CARGO_PKG_VERSION_MAJOR"),
            "_",
            env!("CARGO_PKG_VERSION_MINOR")
        ),
        concat!(
            ".hidden evloop_fiber_trampoline_",
            env!("CARGO_PKG_VERSION_MAJOR"),
            "_",
            env!("CARGO_PKG_VERSION_MINOR")
        ),
        concat!(
            ".type evloop_fiber_trampoline_",
            env!("CARGO_PKG_VERSION_MAJOR"),
            "_",
            env!("CARGO_PKG_VERSION_MINOR"),
            ",@function"
        ),
        concat!(
            "evloop_fiber_trampoline_",
            env!("CARGO_PKG_VERSION_MAJOR"),
            "_",
            env!("CARGO_PKG_VERSION_MINOR"),
            ":"
        ),
        ".cfi_startproc",
        ".cfi_undefined rip",
        "mov rdi, rax",
        "mov rsi, r12",
        "call r13",
        "ud2",
        ".cfi_endproc",
        concat!(
            ".size evloop_fiber_trampoline_",
            env!("CARGO_PKG_VERSION_MAJOR"),
            "_",
            env!("CARGO_PKG_VERSION_MINOR"),
            ", . - evloop_fiber_trampoline_",
            env!("CARGO_PKG_VERSION_MAJOR"),
            "_",
            env!("CARGO_PKG_VERSION_MINOR")
        ),
    );

    // SAFETY: both symbols are defined by the `global_asm!` above, under these link names, with
    // these signatures in the System V calling convention (arguments in rdi, rsi, rdx, result in
    // rax); the trampoline is never called, only returned into.
    unsafe extern "C" {
        /// Saves the callee-saved registers on the current stack, stores the stack pointer at
        /// `save_sp`, loads `to_sp` and restores the registers saved there; returns `arg` on
        /// the other stack.
        #[link_name = concat!("evloop_fiber_switch_", env!("CARGO_PKG_VERSION_MAJOR"), "_", env!("CARGO_PKG_VERSION_MINOR"))]
        pub(super) fn evloop_fiber_switch(arg: usize, to_sp: usize, save_sp: *mut usize) -> usize;
        #[link_name = concat!("evloop_fiber_trampoline_", env!("CARGO_PKG_VERSION_MAJOR"), "_", env!("CARGO_PKG_VERSION_MINOR"))]
        fn evloop_fiber_trampoline();
    }

    /// Writes the first frame of a fresh stack whose top is `top` and returns the stack pointer
    /// to resume it from.
    ///
    /// # Safety
    /// The 96 bytes below `top` must be writable memory owned by the caller.
    pub(super) unsafe fn initial_frame(top: usize, ctx: usize) -> usize {
        // After the `ret` into the trampoline, rsp = sp + 64 must be 16-byte aligned; 16 bytes
        // of zeros above it end the frame chain.
        let sp = (top & !15) - 16 - 64;
        let start: extern "C" fn(usize, usize) -> ! = super::fiber_start;
        let words: [usize; 8] = [
            (MXCSR_DEFAULT | (FPUCW_DEFAULT << 32)) as usize,
            0,                                             // r15
            0,                                             // r14
            start as usize,                                // r13
            ctx,                                           // r12
            0,                                             // rbx
            0,                                             // rbp: ends frame-pointer walks
            evloop_fiber_trampoline as *const () as usize, // return address
        ];
        let frame = sp as *mut usize;
        for (i, w) in words.iter().enumerate() {
            // SAFETY: `sp + 8 * i` for i < 8 and the 16 bytes above stay below `top`, inside
            // the memory the caller owns; `sp` is 16-byte aligned, so every word is aligned.
            unsafe { frame.add(i).write(*w) };
        }
        // SAFETY: as above, the two words between the frame and `top`'s alignment boundary.
        unsafe {
            frame.add(8).write(0);
            frame.add(9).write(0);
        }
        sp
    }
}

#[cfg(target_arch = "aarch64")]
mod arch {
    //! aarch64, AAPCS64: callee-saved are x19-x28, the frame pointer x29, the link register
    //! x30, sp, and the low 64 bits of v8-v15 (d8-d15).

    // `evloop_fiber_switch(arg: x0, to_sp: x1, save_sp: x2) -> x0`
    //
    // Frame left on a suspended stack, from its saved stack pointer up (160 bytes, keeping sp
    // 16-byte aligned): x19..x28, x29, x30 (the return address), d8..d15.
    //
    // The trampoline is entered by the `ret` of the first switch into a fresh stack (x30 was
    // restored to its address), with x0 = arg, x19 = the context, x20 = fiber_start.
    std::arch::global_asm!(
        ".text",
        ".p2align 4",
        concat!(
            ".globl evloop_fiber_switch_",
            env!("CARGO_PKG_VERSION_MAJOR"),
            "_",
            env!("CARGO_PKG_VERSION_MINOR")
        ),
        concat!(
            ".hidden evloop_fiber_switch_",
            env!("CARGO_PKG_VERSION_MAJOR"),
            "_",
            env!("CARGO_PKG_VERSION_MINOR")
        ),
        concat!(
            ".type evloop_fiber_switch_",
            env!("CARGO_PKG_VERSION_MAJOR"),
            "_",
            env!("CARGO_PKG_VERSION_MINOR"),
            ",%function"
        ),
        concat!(
            "evloop_fiber_switch_",
            env!("CARGO_PKG_VERSION_MAJOR"),
            "_",
            env!("CARGO_PKG_VERSION_MINOR"),
            ":"
        ),
        "sub sp, sp, #160",
        "stp x19, x20, [sp, #0]",
        "stp x21, x22, [sp, #16]",
        "stp x23, x24, [sp, #32]",
        "stp x25, x26, [sp, #48]",
        "stp x27, x28, [sp, #64]",
        "stp x29, x30, [sp, #80]",
        "stp d8, d9, [sp, #96]",
        "stp d10, d11, [sp, #112]",
        "stp d12, d13, [sp, #128]",
        "stp d14, d15, [sp, #144]",
        "mov x9, sp",
        "str x9, [x2]",
        "mov sp, x1",
        "ldp x19, x20, [sp, #0]",
        "ldp x21, x22, [sp, #16]",
        "ldp x23, x24, [sp, #32]",
        "ldp x25, x26, [sp, #48]",
        "ldp x27, x28, [sp, #64]",
        "ldp x29, x30, [sp, #80]",
        "ldp d8, d9, [sp, #96]",
        "ldp d10, d11, [sp, #112]",
        "ldp d12, d13, [sp, #128]",
        "ldp d14, d15, [sp, #144]",
        "add sp, sp, #160",
        "ret",
        concat!(
            ".size evloop_fiber_switch_",
            env!("CARGO_PKG_VERSION_MAJOR"),
            "_",
            env!("CARGO_PKG_VERSION_MINOR"),
            ", . - evloop_fiber_switch_",
            env!("CARGO_PKG_VERSION_MAJOR"),
            "_",
            env!("CARGO_PKG_VERSION_MINOR")
        ),
        "",
        ".p2align 4",
        concat!(
            ".globl evloop_fiber_trampoline_",
            env!("CARGO_PKG_VERSION_MAJOR"),
            "_",
            env!("CARGO_PKG_VERSION_MINOR")
        ),
        concat!(
            ".hidden evloop_fiber_trampoline_",
            env!("CARGO_PKG_VERSION_MAJOR"),
            "_",
            env!("CARGO_PKG_VERSION_MINOR")
        ),
        concat!(
            ".type evloop_fiber_trampoline_",
            env!("CARGO_PKG_VERSION_MAJOR"),
            "_",
            env!("CARGO_PKG_VERSION_MINOR"),
            ",%function"
        ),
        concat!(
            "evloop_fiber_trampoline_",
            env!("CARGO_PKG_VERSION_MAJOR"),
            "_",
            env!("CARGO_PKG_VERSION_MINOR"),
            ":"
        ),
        ".cfi_startproc",
        ".cfi_undefined x30",
        "mov x1, x19",
        "blr x20",
        "brk #1",
        ".cfi_endproc",
        concat!(
            ".size evloop_fiber_trampoline_",
            env!("CARGO_PKG_VERSION_MAJOR"),
            "_",
            env!("CARGO_PKG_VERSION_MINOR"),
            ", . - evloop_fiber_trampoline_",
            env!("CARGO_PKG_VERSION_MAJOR"),
            "_",
            env!("CARGO_PKG_VERSION_MINOR")
        ),
    );

    // SAFETY: both symbols are defined by the `global_asm!` above, under these link names, with
    // these signatures in the AAPCS64 calling convention (arguments in x0, x1, x2, result in x0);
    // the trampoline is never called, only returned into.
    unsafe extern "C" {
        /// Saves the callee-saved registers on the current stack, stores the stack pointer at
        /// `save_sp`, loads `to_sp` and restores the registers saved there; returns `arg` on
        /// the other stack.
        #[link_name = concat!("evloop_fiber_switch_", env!("CARGO_PKG_VERSION_MAJOR"), "_", env!("CARGO_PKG_VERSION_MINOR"))]
        pub(super) fn evloop_fiber_switch(arg: usize, to_sp: usize, save_sp: *mut usize) -> usize;
        #[link_name = concat!("evloop_fiber_trampoline_", env!("CARGO_PKG_VERSION_MAJOR"), "_", env!("CARGO_PKG_VERSION_MINOR"))]
        fn evloop_fiber_trampoline();
    }

    /// Writes the first frame of a fresh stack whose top is `top` and returns the stack pointer
    /// to resume it from.
    ///
    /// # Safety
    /// The 176 bytes below `top` must be writable memory owned by the caller.
    pub(super) unsafe fn initial_frame(top: usize, ctx: usize) -> usize {
        let sp = (top & !15) - 16 - 160;
        let start: extern "C" fn(usize, usize) -> ! = super::fiber_start;
        let frame = sp as *mut usize;
        for i in 0..22 {
            // SAFETY: the 176 bytes from `sp` lie below `top`, inside the memory the caller
            // owns; `sp` is 16-byte aligned.
            unsafe { frame.add(i).write(0) };
        }
        // SAFETY: words 0, 1 and 11 of the frame just zeroed: x19, x20 and x30.
        unsafe {
            frame.add(0).write(ctx);
            frame.add(1).write(start as usize);
            frame.add(11).write(evloop_fiber_trampoline as *const () as usize);
        }
        sp
    }
}

mod valgrind {
    //! Valgrind client requests (`valgrind.h`'s `VALGRIND_STACK_REGISTER` and
    //! `VALGRIND_STACK_DEREGISTER`): a "special instruction preamble" of rotations that leaves
    //! the register unchanged (no-op natively), followed by an instruction valgrind's
    //! translator recognises. Arguments go in memory, pointed to by one register; the result
    //! comes back in another (the default value is returned natively).

    const STACK_REGISTER: usize = 0x1501;
    const STACK_DEREGISTER: usize = 0x1502;

    #[cfg(target_arch = "x86_64")]
    fn request(default: usize, args: &[usize; 6]) -> usize {
        let mut result = default;
        // SAFETY: the rotations of rdi add up to 128 bits (rdi is unchanged) and `xchg rbx,
        // rbx` does nothing, so natively this only reads its inputs; under valgrind, the
        // translator reads the six words `args` points to (a live array) and writes rdx.
        unsafe {
            std::arch::asm!(
                "rol rdi, 3",
                "rol rdi, 13",
                "rol rdi, 61",
                "rol rdi, 51",
                "xchg rbx, rbx",
                inout("rdx") result,
                in("rax") args.as_ptr(),
                inout("rdi") 0usize => _,
                options(nostack),
            );
        }
        result
    }

    #[cfg(target_arch = "aarch64")]
    fn request(default: usize, args: &[usize; 6]) -> usize {
        let mut result = default;
        // SAFETY: the rotations of x12 add up to 128 bits (x12 is unchanged) and
        // `orr x10, x10, x10` does nothing, so natively this only reads its inputs; under
        // valgrind, the translator reads the six words `args` points to and writes x3.
        unsafe {
            std::arch::asm!(
                "ror x12, x12, #3",
                "ror x12, x12, #13",
                "ror x12, x12, #51",
                "ror x12, x12, #61",
                "orr x10, x10, x10",
                inout("x3") result,
                in("x4") args.as_ptr(),
                inout("x12") 0usize => _,
                options(nostack),
            );
        }
        result
    }

    /// Tells valgrind that `lo..hi` is a stack; returns its id (0 outside valgrind).
    pub(super) fn stack_register(lo: usize, hi: usize) -> usize {
        request(0, &[STACK_REGISTER, lo, hi.saturating_sub(1), 0, 0, 0])
    }

    /// Forgets the stack with id `id` (registered by `stack_register`).
    pub(super) fn stack_deregister(id: usize) {
        if id != 0 {
            request(0, &[STACK_DEREGISTER, id, 0, 0, 0, 0]);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fiber::stack;

    thread_local! {
        static MAIN: RefCell<Option<Rc<Context>>> = const { RefCell::new(None) };
        static LOG: RefCell<Vec<usize>> = const { RefCell::new(Vec::new()) };
    }

    fn main_ctx() -> Rc<Context> {
        MAIN.with(|m| {
            m.borrow_mut()
                .get_or_insert_with(|| Context::for_thread().expect("first"))
                .clone()
        })
    }

    fn entry(arg: usize) -> Finish {
        LOG.with(|l| l.borrow_mut().push(arg));
        Finish {
            to: main_ctx(),
            arg: arg * 10,
        }
    }

    #[test]
    fn a_context_runs_its_entry_and_comes_back_with_a_word() {
        std::thread::spawn(|| {
            let main = main_ctx();
            let fiber = Context::new(entry);
            assert!(fiber.state() == State::Fresh && !fiber.has_stack());
            fiber.give_stack(stack::allocate(64 * 1024, "t").unwrap());
            assert!(fiber.state() == State::Fresh && fiber.has_stack());
            let back = switch(&main, &fiber, 7);
            assert_eq!(back, 70);
            assert_eq!(LOG.with(|l| l.borrow().clone()), [7]);
            assert_eq!(fiber.state(), State::Dead);
            assert!(!fiber.has_stack(), "its stack went back when main ran again");
            assert!(Context::for_thread().is_none(), "one thread context per thread");
        })
        .join()
        .unwrap();
    }

    #[test]
    fn valgrind_requests_are_no_ops_natively() {
        // Outside valgrind the default comes back and nothing else happens.
        if std::env::var_os("EVLOOP_UNDER_VALGRIND").is_none() {
            assert_eq!(valgrind::stack_register(0x1000, 0x2000), 0);
        }
        valgrind::stack_deregister(0);
    }

    #[test]
    fn an_abandoned_context_never_runs_and_gives_its_stack_back() {
        let f = Context::new(entry);
        f.give_stack(stack::allocate(64 * 1024, "a").unwrap());
        f.abandon();
        assert_eq!(f.state(), State::Dead);
        assert!(!f.has_stack());
        assert_eq!(LOG.with(|l| l.borrow().len()), 0, "its entry never ran");
    }
}
