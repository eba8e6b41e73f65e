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

mod team;

use rayon::prelude::*;
use rayon::{ThreadPool, ThreadPoolBuilder};
use std::cell::RefCell;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Once, RwLock, RwLockWriteGuard};
use team::Team;

/// The pool, its team of spinning helpers, and the fork generation they were built in.
struct Current {
    generation: u64,
    pool: Option<Arc<ThreadPool>>,
    team: Option<Arc<Team>>,
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

/// The pool and its team, built on first use, again after [`set_num_threads`], and again in a
/// forked child; `None` where no thread could be started.
fn current() -> (Option<Arc<ThreadPool>>, Option<Arc<Team>>) {
    let generation = fork_generation();
    if let Some(c) = POOL.read().unwrap_or_else(|e| e.into_inner()).as_ref()
        && c.generation == generation
    {
        return (c.pool.clone(), c.team.clone());
    }
    let mut slot = POOL.write().unwrap_or_else(|e| e.into_inner());
    match slot.take() {
        Some(c) if c.generation == generation => {
            let both = (c.pool.clone(), c.team.clone());
            *slot = Some(c);
            return both;
        }
        Some(stale) => std::mem::forget(stale),
        None => {}
    }
    let pool = build(WANTED.load(Ordering::SeqCst)).map(Arc::new);
    let helpers = pool.as_ref().map_or(0, |p| p.current_num_threads() - 1);
    let team = match helpers {
        0 => None,
        h => Team::new(h).map(Arc::new),
    };
    *slot = Some(Current {
        generation,
        pool: pool.clone(),
        team: team.clone(),
    });
    (pool, team)
}

fn pool() -> Option<Arc<ThreadPool>> {
    current().0
}

fn build(threads: usize) -> Option<ThreadPool> {
    let threads = bounded_threads(threads, std::env::var("RAYON_NUM_THREADS").ok().as_deref());
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

/// The thread count in force for a request of `threads` (0: `RAYON_NUM_THREADS`, given as `env`,
/// or else every CPU): at most the CPUs this process may use, which the standard library reads
/// from its affinity mask and its control group's CPU quota. More threads than CPUs only take
/// turns on them, and thousands of them stall the machine.
pub(crate) fn bounded_threads(threads: usize, env: Option<&str>) -> usize {
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let wanted = match threads {
        0 => env
            .and_then(|v| v.trim().parse::<usize>().ok())
            .filter(|&n| n > 0)
            .unwrap_or(cpus),
        n => n,
    };
    wanted.min(cpus)
}

/// Runs `f` in the pool: rayon's parallel iterators inside it use the pool's threads.
pub(crate) fn run<R: Send>(f: impl FnOnce() -> R + Send) -> R {
    match pool() {
        Some(pool) => pool.install(f),
        None => f(),
    }
}

/// Runs `f(0)..f(tasks)` over the pool's threads and returns when all are done: on the team of
/// spinning helpers with this thread taking tasks too (see [`team`]), on the rayon pool when
/// another call holds the team, on this thread alone where there is neither. For work of tens of
/// microseconds, where rayon's sleeping threads cost more than they give.
pub(crate) fn tasks(tasks: usize, f: impl Fn(usize) + Sync) {
    if tasks <= 1 {
        (0..tasks).for_each(f);
        return;
    }
    let (pool, team) = current();
    let f: &(dyn Fn(usize) + Sync) = &f;
    // No team (one thread, or none could start), or a busy one: the pool, or this thread.
    let f = match team.map(|t| t.run(tasks, f)) {
        Some(Ok(())) => return,
        Some(Err(f)) => f,
        None => f,
    };
    match pool {
        Some(pool) => pool.install(|| (0..tasks).into_par_iter().for_each(f)),
        None => (0..tasks).for_each(f),
    }
}

/// [`tasks`] collecting each task's result, in task order.
pub(crate) fn map<R: Send>(count: usize, f: impl Fn(usize) -> R + Sync) -> Vec<R> {
    let slots: Vec<std::sync::Mutex<Option<R>>> =
        (0..count).map(|_| std::sync::Mutex::new(None)).collect();
    tasks(count, |i| {
        let r = f(i);
        *slots[i].lock().unwrap_or_else(|e| e.into_inner()) = Some(r);
    });
    slots
        .into_iter()
        .map(|m| {
            m.into_inner()
                .unwrap_or_else(|e| e.into_inner())
                .expect("every task ran")
        })
        .collect()
}

/// [`tasks`] over `items`, each task taking its own (disjoint output slices, say).
pub(crate) fn each<T: Send>(items: Vec<T>, f: impl Fn(usize, T) + Sync) {
    let slots: Vec<std::sync::Mutex<Option<T>>> = items
        .into_iter()
        .map(|t| std::sync::Mutex::new(Some(t)))
        .collect();
    tasks(slots.len(), |i| {
        let item = slots[i].lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some(item) = item {
            f(i, item);
        }
    });
}

/// Threads the CPU executor spreads large calls over.
///
/// By default the number of logical CPUs, or `RAYON_NUM_THREADS` when that is set; changed by
/// [`set_num_threads`]; never more than the CPUs the process may use (its affinity and its
/// control group's CPU quota).
pub fn num_threads() -> usize {
    pool().map_or(1, |p| p.current_num_threads())
}

/// Sets the number of threads the CPU executor spreads large calls over, from the next call on,
/// at most the CPUs the process may use ([`num_threads`] reports the count in force); 0 returns
/// to the default. Calls already running finish on the pool they
/// started on. Asking again for the count in force keeps the pool and its threads.
pub fn set_num_threads(threads: usize) {
    let mut slot = POOL.write().unwrap_or_else(|e| e.into_inner());
    // New threads start on their parent's core and are moved off it only by the scheduler's next
    // balancing: calls in the milliseconds after a rebuild found the team's helper sharing the
    // caller's core (a loop that set the same count before each batch of calls ran sixteen
    // queries against 1,000 codes of 16 bytes at 18 us on two threads, 11 us on one).
    let built = slot
        .as_ref()
        .is_some_and(|c| c.generation == GENERATION.load(Ordering::SeqCst));
    if built && WANTED.load(Ordering::SeqCst) == threads {
        return;
    }
    WANTED.store(threads, Ordering::SeqCst);
    // The old pool's threads end once its running calls (which hold it) finish.
    *slot = None;
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;

    /// Every task runs once, results come back in task order, over many calls in a row (the
    /// helpers awake, parked, and in between) and for task counts around the thread count.
    #[test]
    fn thread_requests_are_bounded_by_the_cpus() {
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
        assert_eq!(bounded_threads(100_000, None), cpus);
        assert_eq!(bounded_threads(0, Some("3000")), cpus);
        assert_eq!(bounded_threads(0, Some("junk")), cpus);
        assert_eq!(bounded_threads(0, None), cpus);
        assert_eq!(bounded_threads(1, Some("3000")), 1);
        assert_eq!(bounded_threads(0, Some("1")), 1);
    }

    #[test]
    fn tasks_run_once_each_in_every_call() {
        for round in 0..2000usize {
            let n = round % 37;
            let hits: Vec<AtomicUsize> = (0..n).map(|_| AtomicUsize::new(0)).collect();
            let got = map(n, |i| {
                hits[i].fetch_add(1, Ordering::SeqCst);
                i * 3 + round
            });
            assert_eq!(got, (0..n).map(|i| i * 3 + round).collect::<Vec<_>>());
            assert!(
                hits.iter().all(|h| h.load(Ordering::SeqCst) == 1),
                "round {round}"
            );
            if round % 500 == 0 {
                // Long enough for the helpers to park.
                std::thread::sleep(std::time::Duration::from_millis(2));
            }
        }
    }

    /// Callers on several threads at once (the team busy: rayon takes the others), and a task
    /// that itself splits its work, all get every task run once.
    #[test]
    fn concurrent_and_nested_calls_run_every_task() {
        let total = AtomicUsize::new(0);
        std::thread::scope(|scope| {
            for _ in 0..4 {
                scope.spawn(|| {
                    for _ in 0..200 {
                        tasks(8, |_| {
                            let inner = map(5, |j| j);
                            total.fetch_add(inner.iter().sum::<usize>(), Ordering::SeqCst);
                        });
                    }
                });
            }
        });
        assert_eq!(total.load(Ordering::SeqCst), 4 * 200 * 8 * 10);
    }

    /// A panicking task reaches the caller, and the team works on.
    #[test]
    fn a_task_panic_reaches_the_caller_and_the_team_goes_on() {
        let ran = AtomicUsize::new(0);
        let caught = std::panic::catch_unwind(|| {
            tasks(16, |i| {
                ran.fetch_add(1, Ordering::SeqCst);
                if i == 5 {
                    panic!("task five");
                }
            })
        });
        let msg = caught.expect_err("the panic comes back");
        assert_eq!(msg.downcast_ref::<&str>(), Some(&"task five"));
        // All sixteen on the team; rayon (when another test holds the team) may skip some.
        assert!((1..=16).contains(&ran.load(Ordering::SeqCst)));
        assert_eq!(map(4, |i| i + 1), vec![1, 2, 3, 4]);
    }

    /// Items go to their own task, once.
    #[test]
    fn each_hands_every_item_to_its_task() {
        let mut out = vec![0u32; 1000];
        let chunks: Vec<&mut [u32]> = out.chunks_mut(64).collect();
        each(chunks, |t, c| c.iter_mut().for_each(|v| *v = t as u32 + 1));
        for (i, v) in out.iter().enumerate() {
            assert_eq!(*v as usize, i / 64 + 1);
        }
    }

    /// Held by the tests that change the pool's size, which the test threads share.
    static SIZE: std::sync::Mutex<()> = std::sync::Mutex::new(());

    #[test]
    fn set_num_threads_takes_effect_and_zero_restores_the_default() {
        let _size = SIZE.lock().unwrap_or_else(|e| e.into_inner());
        // Three threads where the machine has the CPUs; no more than it has.
        let three = bounded_threads(3, None);
        set_num_threads(3);
        assert_eq!(num_threads(), three);
        assert_eq!(run(rayon::current_num_threads), three);
        set_num_threads(1);
        assert_eq!(num_threads(), 1);
        // No team with one thread: every task still runs, here.
        assert_eq!(map(5, |i| i * 2), vec![0, 2, 4, 6, 8]);
        let mut out = [0u8; 4];
        each(out.chunks_mut(1).collect(), |t, c| c[0] = t as u8 + 1);
        assert_eq!(out, [1, 2, 3, 4]);
        set_num_threads(0);
        assert_eq!(
            num_threads(),
            ThreadPoolBuilder::new()
                .build()
                .unwrap()
                .current_num_threads()
        );
    }

    /// The count in force asked for again keeps the pool and its team (the same threads); another
    /// count builds new ones.
    #[test]
    fn the_same_count_again_keeps_the_threads() {
        let _size = SIZE.lock().unwrap_or_else(|e| e.into_inner());
        set_num_threads(2);
        let (pool, team) = current();
        set_num_threads(2);
        let (again, team_again) = current();
        assert!(Arc::ptr_eq(pool.as_ref().unwrap(), again.as_ref().unwrap()));
        assert!(Arc::ptr_eq(
            team.as_ref().unwrap(),
            team_again.as_ref().unwrap()
        ));
        assert_eq!(map(4, |i| i + 1), vec![1, 2, 3, 4]);
        set_num_threads(3);
        let (other, _) = current();
        assert!(!Arc::ptr_eq(
            pool.as_ref().unwrap(),
            other.as_ref().unwrap()
        ));
        assert_eq!(num_threads(), bounded_threads(3, None));
        set_num_threads(0);
    }
}
