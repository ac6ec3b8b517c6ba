//! Places for open event streams (a run followed live). A stream holds its connection for
//! as long as the run goes, days for one waiting on an approval, so streams are bounded:
//! at most half the connections the server holds (the rest answer everything else), and
//! at most [`PER_CALLER`] for any one caller (a user, or the operator), so that one user
//! cannot take the others' places.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// Streams one caller may hold open at once.
pub const PER_CALLER: usize = 16;

#[derive(Debug)]
pub struct StreamSlots {
    total: usize,
    held: Mutex<HashMap<String, usize>>,
}

/// One open stream's place, given back when it is dropped.
#[derive(Debug)]
pub struct StreamSlot {
    slots: Arc<StreamSlots>,
    caller: String,
}

/// Why a stream found no place.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Full {
    /// The server's streams are all taken.
    Server,
    /// This caller holds [`PER_CALLER`] already.
    Caller,
}

impl StreamSlots {
    /// Places for streams on a server holding `connections` at most.
    pub fn new(connections: usize) -> Arc<Self> {
        Arc::new(Self {
            total: (connections / 2).max(1),
            held: Mutex::default(),
        })
    }

    /// A place for one more of `caller`'s streams.
    pub fn take(self: &Arc<Self>, caller: &str) -> Result<StreamSlot, Full> {
        let mut held = self.held.lock().unwrap_or_else(|p| p.into_inner());
        if held.values().sum::<usize>() >= self.total {
            return Err(Full::Server);
        }
        let mine = held.entry(caller.to_string()).or_insert(0);
        if *mine >= PER_CALLER {
            return Err(Full::Caller);
        }
        *mine += 1;
        Ok(StreamSlot {
            slots: self.clone(),
            caller: caller.to_string(),
        })
    }
}

impl Drop for StreamSlot {
    fn drop(&mut self) {
        let mut held = self.slots.held.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(mine) = held.get_mut(&self.caller) {
            *mine -= 1;
            if *mine == 0 {
                held.remove(&self.caller);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_caller_holds_its_share_and_the_server_its_half() {
        let slots = StreamSlots::new(2 * (PER_CALLER + 1));
        let mine: Vec<_> = (0..PER_CALLER)
            .map(|_| slots.take("ana").unwrap())
            .collect();
        assert_eq!(slots.take("ana").unwrap_err(), Full::Caller);
        let bobs = slots.take("bob").unwrap();
        assert_eq!(slots.take("cy").unwrap_err(), Full::Server);
        drop(bobs);
        assert!(slots.take("cy").is_ok());
        drop(mine);
        assert!(slots.take("ana").is_ok());
        assert!(
            slots.held.lock().unwrap().len() <= 2,
            "places are given back"
        );
    }
}
