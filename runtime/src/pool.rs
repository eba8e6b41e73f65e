//! The CPU executor's thread pool: its size ([`set_num_threads`], [`num_threads`]), and its
//! survival across `fork`.
//!
//! A forked child has only the thread that called `fork`; a pool's worker threads are not copied,
//! so a job sent to them waits forever (this is what rayon's global pool does in a child). The pool
//! here is rebuilt in a child on first use: a `pthread_atfork` handler counts forks
//! ([`fork_generation`]), and a pool made in an older generation is abandoned, never touched again
//! (its threads do not exist, and its locks may be held by them). The same count lets other
//! per-process state, such as a cached GPU device, be rebuilt after a fork.
//!
//! While `fork` runs, the pool's lock is held by the forking thread, so the child never inherits it
//! locked by a thread it does not have.

use rayon::{ThreadPool, ThreadPoolBuilder};
use std::cell::RefCell;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Once, RwLock, RwLockWriteGuard};

/// The pool and the fork generation it was built in.
struct Current {
    generation: u64,
    pool: Option<Arc<ThreadPool>>,
}

static POOL: RwLock<Option<Current>> = RwLock::new(None);
/// Threads asked for by [`set_num_threads`]; 0 for the default.
static WANTED: AtomicUsize = AtomicUsize::new(0);
/// Forks this process descends from (counted in each child).
static GENERATION: AtomicU64 = AtomicU64::new(0);
static HANDLER: Once = Once::new();

thread_local! {
    /// The pool's lock, held by the forking thread while `fork` copies the process.
    static HELD: RefCell<Option<RwLockWriteGuard<'static, Option<Current>>>> =
        const { RefCell::new(None) };
}

#[cfg(unix)]
extern "C" fn before_fork() {
    let guard = POOL.write().unwrap_or_else(|e| e.into_inner());
    HELD.with(|h| *h.borrow_mut() = Some(guard));
}

#[cfg(unix)]
extern "C" fn after_fork_in_parent() {
    HELD.with(|h| drop(h.borrow_mut().take()));
}

#[cfg(unix)]
extern "C" fn after_fork_in_child() {
    GENERATION.fetch_add(1, Ordering::SeqCst);
    HELD.with(|h| {
        if let Some(mut guard) = h.borrow_mut().take() {
            // The old pool's threads are not in this process: leak it rather than drop it, as
            // dropping would signal threads (and locks) that are gone.
            if let Some(old) = guard.take() {
                std::mem::forget(old);
            }
        }
    });
}

fn register_fork_handler() {
    HANDLER.call_once(|| {
        #[cfg(unix)]
        #[allow(unsafe_code, reason = "pthread_atfork is a C function")]
        // SAFETY: the three handlers are `extern "C"` functions without arguments, as
        // `pthread_atfork` requires; they only take and release this module's lock and count.
        unsafe {
            libc::pthread_atfork(
                Some(before_fork),
                Some(after_fork_in_parent),
                Some(after_fork_in_child),
            );
        }
    });
}

/// How many times the process was forked since the library was first used: 0 in the process that
/// loaded it, 1 in a child it forks, and so on. State that does not survive `fork` (threads, GPU
/// devices) is cached together with this number and rebuilt when it changes.
pub fn fork_generation() -> u64 {
    register_fork_handler();
    GENERATION.load(Ordering::SeqCst)
}

/// The pool, built on first use, again after [`set_num_threads`], and again in a forked child;
/// `None` where no thread could be started.
fn pool() -> Option<Arc<ThreadPool>> {
    let generation = fork_generation();
    if let Some(c) = POOL.read().unwrap_or_else(|e| e.into_inner()).as_ref()
        && c.generation == generation
    {
        return c.pool.clone();
    }
    let mut slot = POOL.write().unwrap_or_else(|e| e.into_inner());
    match slot.take() {
        Some(c) if c.generation == generation => {
            let pool = c.pool.clone();
            *slot = Some(c);
            return pool;
        }
        Some(stale) => std::mem::forget(stale),
        None => {}
    }
    let pool = build(WANTED.load(Ordering::SeqCst)).map(Arc::new);
    *slot = Some(Current {
        generation,
        pool: pool.clone(),
    });
    pool
}

fn build(threads: usize) -> Option<ThreadPool> {
    let named = |threads| {
        ThreadPoolBuilder::new()
            .num_threads(threads)
            .thread_name(|i| format!("tensorbits-{i}"))
            .build()
    };
    // A process at its thread limit gets a smaller pool, or none: calls then run on the caller's
    // thread (every parallel path is taken only with more than one thread).
    named(threads).or_else(|_| named(1)).ok()
}

/// Runs `f` in the pool: rayon's parallel iterators inside it use the pool's threads.
pub(crate) fn run<R: Send>(f: impl FnOnce() -> R + Send) -> R {
    match pool() {
        Some(pool) => pool.install(f),
        None => f(),
    }
}

/// Threads the CPU executor spreads large calls over.
///
/// By default the number of logical CPUs, or `RAYON_NUM_THREADS` when that is set; changed by
/// [`set_num_threads`].
pub fn num_threads() -> usize {
    pool().map_or(1, |p| p.current_num_threads())
}

/// Sets the number of threads the CPU executor spreads large calls over, from the next call on;
/// 0 returns to the default ([`num_threads`]). Calls already running finish on the pool they
/// started on.
pub fn set_num_threads(threads: usize) {
    let mut slot = POOL.write().unwrap_or_else(|e| e.into_inner());
    WANTED.store(threads, Ordering::SeqCst);
    // The old pool's threads end once its running calls (which hold it) finish.
    *slot = None;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn set_num_threads_takes_effect_and_zero_restores_the_default() {
        set_num_threads(3);
        assert_eq!(num_threads(), 3);
        assert_eq!(run(rayon::current_num_threads), 3);
        set_num_threads(1);
        assert_eq!(num_threads(), 1);
        set_num_threads(0);
        assert_eq!(
            num_threads(),
            ThreadPoolBuilder::new()
                .build()
                .unwrap()
                .current_num_threads()
        );
    }
}
