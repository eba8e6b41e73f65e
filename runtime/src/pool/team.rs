//! A team of spinning helper threads for medium-sized parallel work.
//!
//! Rayon's fork-join parks the calling thread on a lock until the pool's threads finish, and its
//! idle threads sleep on a condition variable. Each park and wake is a system call, and in a
//! virtual machine waking a halted virtual CPU costs an interrupt through the hypervisor: on a
//! 2-vCPU VM, `install` with a `join` of two empty halves took 17 us and `in_place_scope` with
//! one spawned task 13 us, the time of a hundred queries against a thousand short codes.
//!
//! A team has one helper thread fewer than the pool. The caller publishes a job (a function of a
//! task index and a count of tasks), takes tasks itself, and spins until the helpers' tasks are
//! done. Helpers spin for a while after each job before they park, as OpenMP's threads do, so that
//! back-to-back calls find them awake: the same two halves then cost about 0.3 us more than one.
//! A call that finds the team busy (another thread's job, or a task's own nested call) goes to the
//! rayon pool instead.
//!
//! Safety rests on one rule: a job lives on its caller's stack, and the caller does not return
//! until no helper can touch it. Helpers count themselves `inside` before they read the job
//! pointer; the caller clears the pointer, then waits for every task to be done and for `inside`
//! to drop to zero. Both sides use sequentially consistent operations, so a helper that read the
//! pointer before it was cleared is counted when the caller looks.

#![allow(
    unsafe_code,
    reason = "a job's lifetime is erased while helpers run it"
)]

use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU64, AtomicUsize, Ordering::SeqCst};
use std::thread::{self, JoinHandle, Thread};
use std::time::{Duration, Instant};

/// How long a helper spins for the next job before it parks.
const SPIN: Duration = Duration::from_micros(100);

/// One call's work: `tasks` calls of `f`, handed out by `next`.
struct Job<'a> {
    f: &'a (dyn Fn(usize) + Sync),
    tasks: usize,
    next: AtomicUsize,
    done: AtomicUsize,
    panic: std::sync::Mutex<Option<Box<dyn std::any::Any + Send>>>,
}

impl Job<'_> {
    /// Takes tasks until none are left.
    fn work(&self) {
        loop {
            let i = self.next.fetch_add(1, SeqCst);
            if i >= self.tasks {
                return;
            }
            if let Err(p) = catch_unwind(AssertUnwindSafe(|| (self.f)(i))) {
                let mut slot = self.panic.lock().unwrap_or_else(|e| e.into_inner());
                slot.get_or_insert(p);
            }
            self.done.fetch_add(1, SeqCst);
        }
    }
}

/// What the caller and the helpers share.
struct Shared {
    /// The current job, or null; points into the caller's stack while it waits.
    job: AtomicPtr<Job<'static>>,
    /// Bumped when a job is published: helpers wait for it to change.
    epoch: AtomicU64,
    /// Helpers between reading `job` and being done with it.
    inside: AtomicUsize,
    /// Set while a caller owns the team.
    busy: AtomicBool,
    /// Set when the team is dropped: helpers exit.
    stop: AtomicBool,
    /// Per helper: parked (or about to park), so the caller must unpark it.
    parked: Vec<AtomicBool>,
}

/// The helper threads and what they share with callers.
pub(super) struct Team {
    shared: Arc<Shared>,
    threads: Vec<Thread>,
    handles: Vec<JoinHandle<()>>,
}

impl Team {
    /// A team of `helpers` threads; `None` if no thread could be started.
    pub(super) fn new(helpers: usize) -> Option<Team> {
        let shared = Arc::new(Shared {
            job: AtomicPtr::new(std::ptr::null_mut()),
            epoch: AtomicU64::new(0),
            inside: AtomicUsize::new(0),
            busy: AtomicBool::new(false),
            stop: AtomicBool::new(false),
            parked: (0..helpers).map(|_| AtomicBool::new(false)).collect(),
        });
        let mut team = Team {
            shared: shared.clone(),
            threads: Vec::new(),
            handles: Vec::new(),
        };
        for h in 0..helpers {
            let s = shared.clone();
            let handle = thread::Builder::new()
                .name(format!("tensorbits-team-{h}"))
                .spawn(move || helper(&s, h))
                .ok()?;
            team.threads.push(handle.thread().clone());
            team.handles.push(handle);
        }
        Some(team)
    }

    /// Runs `f(0)..f(tasks)` on this thread and the helpers, returning when all are done;
    /// `Err(f)` (nothing run) when another call owns the team. A panic in a task is resumed here
    /// once every task has finished.
    pub(super) fn run<'f>(
        &self,
        tasks: usize,
        f: &'f (dyn Fn(usize) + Sync),
    ) -> Result<(), &'f (dyn Fn(usize) + Sync)> {
        let s = &*self.shared;
        if s.busy.swap(true, SeqCst) {
            return Err(f);
        }
        let job = Job {
            f,
            tasks,
            next: AtomicUsize::new(0),
            done: AtomicUsize::new(0),
            panic: std::sync::Mutex::new(None),
        };
        // SAFETY: only the lifetime is changed. Helpers use the job only between counting
        // themselves `inside` and uncounting, after reading it from `s.job`; it is cleared below,
        // and this function returns only once `inside` is zero after that (see the module's note).
        let erased: *const Job<'static> = unsafe { std::mem::transmute(&raw const job) };
        s.job.store(erased.cast_mut(), SeqCst);
        s.epoch.fetch_add(1, SeqCst);
        for (p, t) in s.parked.iter().zip(&self.threads) {
            if p.load(SeqCst) {
                t.unpark();
            }
        }
        job.work();
        s.job.store(std::ptr::null_mut(), SeqCst);
        let mut spins = 0u32;
        while job.done.load(SeqCst) < tasks || s.inside.load(SeqCst) != 0 {
            spins = spins.saturating_add(1);
            if spins < 1 << 12 {
                std::hint::spin_loop();
            } else {
                thread::yield_now();
            }
        }
        s.busy.store(false, SeqCst);
        let panic = job.panic.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some(p) = panic {
            resume_unwind(p);
        }
        Ok(())
    }
}

impl Drop for Team {
    fn drop(&mut self) {
        self.shared.stop.store(true, SeqCst);
        for t in &self.threads {
            t.unpark();
        }
        // Not joined: a helper may be parked on a slow wake, and nothing of the team's outlives
        // its `Arc`.
        self.handles.clear();
    }
}

/// A helper's loop: wait for a new epoch (spinning, then parked), run the job's tasks, repeat.
fn helper(s: &Shared, me: usize) {
    let mut seen = s.epoch.load(SeqCst);
    loop {
        let start = Instant::now();
        let mut spins = 0u32;
        loop {
            if s.stop.load(SeqCst) {
                return;
            }
            let e = s.epoch.load(SeqCst);
            if e != seen {
                seen = e;
                break;
            }
            spins = spins.wrapping_add(1);
            if !spins.is_multiple_of(256) || start.elapsed() < SPIN {
                std::hint::spin_loop();
                continue;
            }
            s.parked[me].store(true, SeqCst);
            if s.epoch.load(SeqCst) == seen && !s.stop.load(SeqCst) {
                thread::park();
            }
            s.parked[me].store(false, SeqCst);
        }
        s.inside.fetch_add(1, SeqCst);
        let p = s.job.load(SeqCst);
        if !p.is_null() {
            // SAFETY: counted `inside` before reading a non-null pointer, so the caller that
            // published it is still waiting (module note).
            unsafe { (*p).work() };
        }
        s.inside.fetch_sub(1, SeqCst);
    }
}
