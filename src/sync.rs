//! Locks that outlive a panic. A std lock whose holder panicked ("poisoned") still guards valid
//! data everywhere in this crate — no invariant of a locked value spans code that can unwind —
//! so every lock is taken through these, and taking one never fails.
//!
//! Owns: [`lock`], and [`Locked`] / [`ReadWrite`] for method chains on `Mutex` and `RwLock`.
//! Never does: anything else (no waiting policy, no lock ordering).

use std::sync::{Mutex, MutexGuard, PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard};

/// `mutex`'s guard, poisoned or not.
pub(crate) fn lock<T: ?Sized>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// [`lock`] as a method.
pub(crate) trait Locked<T: ?Sized> {
    /// `Mutex::lock`, poisoned or not.
    fn locked(&self) -> MutexGuard<'_, T>;
}

impl<T: ?Sized> Locked<T> for Mutex<T> {
    fn locked(&self) -> MutexGuard<'_, T> {
        lock(self)
    }
}

/// `RwLock`'s guards, poisoned or not.
pub(crate) trait ReadWrite<T: ?Sized> {
    /// `RwLock::read`, poisoned or not.
    fn reading(&self) -> RwLockReadGuard<'_, T>;
    /// `RwLock::write`, poisoned or not.
    fn writing(&self) -> RwLockWriteGuard<'_, T>;
}

impl<T: ?Sized> ReadWrite<T> for RwLock<T> {
    fn reading(&self) -> RwLockReadGuard<'_, T> {
        self.read().unwrap_or_else(PoisonError::into_inner)
    }

    fn writing(&self) -> RwLockWriteGuard<'_, T> {
        self.write().unwrap_or_else(PoisonError::into_inner)
    }
}
