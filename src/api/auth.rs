//! Who is calling: the bearer token, checked once per request (shared with the MCP
//! endpoint), and the token's rate. A user token acts as its user; an admin token as the
//! operator, naming the user with `?user=` where one is needed.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Instant;

use axum::extract::FromRequestParts;
use axum::http::header::AUTHORIZATION;
use axum::http::request::Parts;

use super::error::ApiError;
use super::ApiState;
use crate::access::Actor;
use crate::tokens::{Authenticated, TokenError};

/// The caller of a request, once their token has been checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Caller {
    pub token_id: String,
    pub actor: Actor,
}

impl Caller {
    /// The user a user-scoped operation acts for: a user token's own user (a different
    /// `?user=` is refused), or the user an admin token names.
    pub fn user_for(&self, asked: Option<&str>) -> Result<String, ApiError> {
        match (&self.actor, asked) {
            (Actor::User(user), None) => Ok(user.clone()),
            (Actor::User(user), Some(asked)) if asked == user => Ok(user.clone()),
            (Actor::User(_), Some(_)) => Err(ApiError::forbidden(
                "a user token acts as its own user only",
            )),
            (Actor::Operator, Some(asked)) => {
                crate::input::check_user_id(asked).map_err(ApiError::from)?;
                Ok(asked.to_string())
            }
            (Actor::Operator, None) => Err(ApiError::bad_input(
                "an admin token names the user it acts for: add ?user=USER",
            )),
        }
    }

    /// The actor for an operation on ids (schedules, runs, sessions): a user token's user;
    /// for an admin token, the operator, or the user `?user=` names.
    pub fn actor_for(&self, asked: Option<&str>) -> Result<Actor, ApiError> {
        match (&self.actor, asked) {
            (Actor::Operator, None) => Ok(Actor::Operator),
            _ => Ok(Actor::User(self.user_for(asked)?)),
        }
    }

    /// Refuses a user token on an admin route.
    pub fn require_admin(&self) -> Result<(), ApiError> {
        if self.actor.is_operator() {
            Ok(())
        } else {
            Err(ApiError::forbidden("this route needs an admin token"))
        }
    }
}

/// Checks the bearer token of a request and the token's rate.
pub async fn authenticate(state: &ApiState, parts: &Parts) -> Result<Caller, ApiError> {
    let secret = parts
        .headers
        .get(AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| {
            v.strip_prefix("Bearer ")
                .or_else(|| v.strip_prefix("bearer "))
        })
        .map(str::trim)
        .ok_or_else(ApiError::unauthenticated)?;
    let Authenticated { token_id, actor } = match state.app.tokens().authenticate(secret).await {
        Ok(found) => found,
        Err(TokenError::Unauthenticated) => return Err(ApiError::unauthenticated()),
        Err(other) => return Err(other.into()),
    };
    state.rate.check(&token_id)?;
    Ok(Caller { token_id, actor })
}

impl FromRequestParts<ApiState> for Caller {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &ApiState) -> Result<Self, ApiError> {
        if let Some(caller) = parts.extensions.get::<Caller>() {
            return Ok(caller.clone());
        }
        let caller = authenticate(state, parts).await?;
        parts.extensions.insert(caller.clone());
        Ok(caller)
    }
}

/// A token bucket per token: `rate` requests a second, `burst` at once.
pub struct RateLimiter {
    rate: f64,
    burst: f64,
    buckets: Mutex<HashMap<String, Bucket>>,
}

struct Bucket {
    tokens: f64,
    at: Instant,
}

/// Buckets kept before idle ones are dropped (a full bucket is the same as none).
const MAX_BUCKETS: usize = 10_000;

impl RateLimiter {
    pub fn new(rate: f64, burst: u32) -> Self {
        Self {
            rate,
            burst: burst as f64,
            buckets: Mutex::new(HashMap::new()),
        }
    }

    /// Takes one request from the token's bucket, or says when one will be there.
    pub fn check(&self, token_id: &str) -> Result<(), ApiError> {
        let now = Instant::now();
        let mut buckets = self.buckets.lock().unwrap_or_else(|e| e.into_inner());
        if buckets.len() >= MAX_BUCKETS && !buckets.contains_key(token_id) {
            let (rate, burst) = (self.rate, self.burst);
            buckets.retain(|_, b| b.tokens + now.duration_since(b.at).as_secs_f64() * rate < burst);
        }
        let bucket = buckets.entry(token_id.to_string()).or_insert(Bucket {
            tokens: self.burst,
            at: now,
        });
        let refilled = bucket.tokens + now.duration_since(bucket.at).as_secs_f64() * self.rate;
        bucket.tokens = refilled.min(self.burst);
        bucket.at = now;
        if bucket.tokens >= 1.0 {
            bucket.tokens -= 1.0;
            Ok(())
        } else {
            let wait = ((1.0 - bucket.tokens) / self.rate).ceil().max(1.0) as u64;
            Err(ApiError::rate_limited(wait))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bucket_allows_its_burst_then_its_rate() {
        let limiter = RateLimiter::new(1.0, 3);
        for _ in 0..3 {
            assert!(limiter.check("t").is_ok());
        }
        let refused = limiter.check("t").unwrap_err();
        assert_eq!(refused.status, axum::http::StatusCode::TOO_MANY_REQUESTS);
        assert_eq!(refused.retry_after_secs, Some(1));
        assert!(limiter.check("other").is_ok(), "buckets are per token");
    }
}
