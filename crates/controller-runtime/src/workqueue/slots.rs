//! A slab of per-item states, so that the ready queue can point at an item's state by index and
//! `get` does not hash the item again.

/// Per-item states by index; freed indexes are reused.
pub(crate) struct Slots<S> {
    slots: Vec<S>,
    free: Vec<usize>,
}

impl<S> Default for Slots<S> {
    fn default() -> Self {
        Slots {
            slots: Vec::new(),
            free: Vec::new(),
        }
    }
}

impl<S: Default> Slots<S> {
    /// Stores `state` and returns its index.
    pub(crate) fn insert(&mut self, state: S) -> usize {
        match self.free.pop() {
            Some(i) => {
                self.slots[i] = state;
                i
            }
            None => {
                self.slots.push(state);
                self.slots.len() - 1
            }
        }
    }

    /// Frees index `i` (its state is reset).
    pub(crate) fn remove(&mut self, i: usize) {
        self.slots[i] = S::default();
        self.free.push(i);
    }

    /// Every slot, free ones holding the default state.
    pub(crate) fn iter(&self) -> impl Iterator<Item = &S> {
        self.slots.iter()
    }
}

impl<S> std::ops::Index<usize> for Slots<S> {
    type Output = S;
    fn index(&self, i: usize) -> &S {
        &self.slots[i]
    }
}

impl<S> std::ops::IndexMut<usize> for Slots<S> {
    fn index_mut(&mut self, i: usize) -> &mut S {
        &mut self.slots[i]
    }
}
