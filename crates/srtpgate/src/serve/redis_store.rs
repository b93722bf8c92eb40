//! Calls kept in Redis, so that a restarted relay (or another one taking
//! over its addresses) resumes them without ever reusing keystream.
//!
//! What is kept, per call (`<namespace>:call:<Call-ID>`): its signalling
//! state (tags, m-lines, each side's address, port, peer, SDES keys), as
//! JSON sealed with AES-256-GCM under the key of `redis_key_file` (the
//! Redis key's name is the associated data, so a record cannot be moved
//! to another call). Per call also a hash (`<namespace>:idx:<Call-ID>`) of
//! where each SRTP stream stands, in the clear (indices are not secret):
//!
//! - for each stream the relay sends on, a **reservation**: the highest
//!   SRTP index and the SRTCP index it may use. The worker's context
//!   refuses anything beyond it ([`srtp::Context::reserve`]); the control
//!   thread raises it ahead of use, and the worker is told only after
//!   Redis has the new value. So whatever a relay sent before a crash is
//!   covered by what Redis holds, and the relay that resumes takes every
//!   index up to it as used;
//! - for each stream it receives, the highest index seen (written every few
//!   seconds: it carries the rollover counter across the restart, and
//!   replays of what came before it are refused);
//! - each master key's use (its lifetime).
//!
//! The records, their sealing and the index fields are
//! `srtpgate_calls::record`'s; this file is the store: the connection, the
//! writer thread, and loading at start.
//!
//! Writes go through one thread that owns the connection, in pipelined
//! batches; the signalling and the media never wait for Redis. While Redis
//! cannot be reached, writes wait and are retried, so reservations are not
//! raised: a stream that reaches the end of its reservation stops (its
//! packets are counted as `not_reserved`) rather than go on unprotected by
//! a persisted reservation. Calls with DTLS-SRTP or ICE legs, and
//! transcoded calls, are not kept (their DTLS and codec state cannot be
//! resumed); they end with the relay.

use super::config::RedisConfig;
use crossbeam_channel::{Receiver, Sender};
pub use srtpgate_calls::record::Loaded;
use srtpgate_calls::record::{CallRecord, Sealer};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::time::Duration;
use zeroize::Zeroizing;

/// A Redis URL for the log: a password in it is not shown.
pub fn redacted(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(i), Some(at)) if at > i => format!("{}***{}", &url[..i + 3], &url[at..]),
        _ => url.to_string(),
    }
}

/// Work that runs once a write is in Redis (raising a reservation).
pub type Then = Box<dyn FnOnce() + Send>;

enum Write {
    Call { id: String, record: Vec<u8> },
    Delete { id: String },
    Fields { id: String, fields: Vec<(String, Vec<u8>)>, then: Vec<Then> },
}

/// The relay's handle on Redis.
pub struct Store {
    tx: Sender<Write>,
    sealer: Arc<Sealer>,
    ns: String,
    /// Failed Redis operations (each retried).
    pub errors: Arc<AtomicU64>,
    /// Batches written.
    pub batches: Arc<AtomicU64>,
    /// Writes waiting for Redis.
    pub pending: Arc<AtomicU64>,
    /// Times a write went through after failures (Redis may have come back
    /// empty: the relay then writes everything again).
    pub recoveries: Arc<AtomicU64>,
}

impl Store {
    /// Connects (failing start-up when Redis cannot be reached: a relay
    /// asked to keep its calls must not start without them), reads back
    /// the calls kept, and starts the writer thread.
    pub fn open(cfg: &RedisConfig) -> Result<(Store, Vec<Loaded>), String> {
        let shown = redacted(&cfg.url);
        let client = redis::Client::open(cfg.url.as_str()).map_err(|e| format!("redis {shown}: {e}"))?;
        let mut con = connect(&client).map_err(|e| format!("redis {shown}: {e}"))?;
        let sealer = Arc::new(Sealer::new(&cfg.key));
        let ns = cfg.namespace.clone();
        let loaded = load(&mut con, &ns, &sealer)?;
        let (tx, rx) = crossbeam_channel::unbounded();
        let store = Store {
            tx,
            sealer,
            ns: ns.clone(),
            errors: Arc::default(),
            batches: Arc::default(),
            pending: Arc::default(),
            recoveries: Arc::default(),
        };
        let counters = Counters {
            errors: store.errors.clone(),
            batches: store.batches.clone(),
            pending: store.pending.clone(),
            recoveries: store.recoveries.clone(),
        };
        std::thread::Builder::new()
            .name("redis".into())
            .spawn(move || writer(client, con, ns, rx, counters))
            .map_err(|e| format!("cannot start the Redis thread: {e}"))?;
        Ok((store, loaded))
    }

    /// Keeps (replaces) a call's record.
    pub fn put_call(&self, record: &CallRecord) {
        let plain = Zeroizing::new(serde_json::to_vec(record).expect("a call record serializes"));
        let sealed = self.sealer.seal(&call_key(&self.ns, &record.id), &plain);
        self.send(Write::Call { id: record.id.clone(), record: sealed });
    }

    /// Forgets a call (record and indices).
    pub fn delete(&self, id: &str) {
        self.send(Write::Delete { id: id.to_string() });
    }

    /// Writes index fields of a call, each value sealed (bound to the call
    /// and the field: one cannot be moved to lower another's reservation);
    /// `then` runs once Redis has them.
    pub fn put_fields(&self, id: &str, fields: Vec<(String, String)>, then: Vec<Then>) {
        let fields = fields
            .into_iter()
            .map(|(f, v)| {
                let sealed = self.sealer.seal(&field_name(&self.ns, id, &f), v.as_bytes());
                (f, sealed)
            })
            .collect();
        self.send(Write::Fields { id: id.to_string(), fields, then });
    }

    /// Waits up to `within` for every write queued so far to reach Redis
    /// (a clean stop). Returns whether they did.
    pub fn written(&self, within: Duration) -> bool {
        let deadline = std::time::Instant::now() + within;
        while self.pending.load(Relaxed) > 0 {
            if std::time::Instant::now() >= deadline {
                return false;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        true
    }

    fn send(&self, w: Write) {
        self.pending.fetch_add(1, Relaxed);
        let _ = self.tx.send(w);
    }
}

fn call_key(ns: &str, id: &str) -> String {
    format!("{ns}:call:{id}")
}

fn idx_key(ns: &str, id: &str) -> String {
    format!("{ns}:idx:{id}")
}

/// The name an index value is sealed under.
fn field_name(ns: &str, id: &str, field: &str) -> String {
    format!("{ns}:idx:{id}\0{field}")
}

struct Counters {
    errors: Arc<AtomicU64>,
    batches: Arc<AtomicU64>,
    pending: Arc<AtomicU64>,
    recoveries: Arc<AtomicU64>,
}

fn connect(client: &redis::Client) -> redis::RedisResult<redis::Connection> {
    let con = client.get_connection_with_timeout(Duration::from_secs(2))?;
    con.set_read_timeout(Some(Duration::from_secs(2)))?;
    con.set_write_timeout(Some(Duration::from_secs(2)))?;
    Ok(con)
}

/// The keys of the namespace that match `pattern` (`*` after the prefix).
fn scan(con: &mut redis::Connection, pattern: &str) -> Result<Vec<String>, String> {
    let mut names = Vec::new();
    let mut cursor = 0u64;
    loop {
        let (next, batch): (u64, Vec<String>) = redis::cmd("SCAN")
            .arg(cursor)
            .arg("MATCH")
            .arg(pattern)
            .arg("COUNT")
            .arg(1000)
            .query(con)
            .map_err(|e| format!("redis: reading the calls kept: {e}"))?;
        names.extend(batch);
        if next == 0 {
            return Ok(names);
        }
        cursor = next;
    }
}

/// Reads every call of the namespace. A record that does not open or parse
/// is skipped with an error in the log (and left in Redis). Index hashes of
/// no call (a call that was not kept, when the relay stopped) are deleted.
fn load(con: &mut redis::Connection, ns: &str, sealer: &Sealer) -> Result<Vec<Loaded>, String> {
    let names = scan(con, &format!("{ns}:call:*"))?;
    for idx in scan(con, &format!("{ns}:idx:*"))? {
        let Some(id) = idx.strip_prefix(&format!("{ns}:idx:")) else { continue };
        if !names.contains(&call_key(ns, id)) {
            let _: redis::RedisResult<()> = redis::cmd("DEL").arg(&idx).query(con);
        }
    }
    let mut out = Vec::new();
    for name in names {
        let Some(id) = name.strip_prefix(&format!("{ns}:call:")) else { continue };
        let sealed: Option<Vec<u8>> =
            redis::cmd("GET").arg(&name).query(con).map_err(|e| format!("redis: reading {name}: {e}"))?;
        let Some(sealed) = sealed else { continue };
        let record = match sealer
            .open(&name, &sealed)
            .and_then(|p| serde_json::from_slice::<CallRecord>(&p).map_err(|e| format!("does not parse: {e}")))
        {
            Ok(r) if r.id == id => r,
            Ok(_) => {
                tracing::error!(call_id = id, "kept call names another Call-ID; skipped");
                continue;
            }
            Err(e) => {
                tracing::error!(call_id = id, "kept call skipped: {e}");
                continue;
            }
        };
        let sealed: HashMap<String, Vec<u8>> = redis::cmd("HGETALL")
            .arg(idx_key(ns, id))
            .query(con)
            .map_err(|e| format!("redis: reading the indices of {id}: {e}"))?;
        let mut indexes = HashMap::new();
        for (f, v) in sealed {
            match sealer.open(&field_name(ns, id, &f), &v).ok().and_then(|p| String::from_utf8(p.to_vec()).ok()) {
                Some(v) => {
                    indexes.insert(f, v);
                }
                None => tracing::error!(call_id = id, field = f, "kept index does not open; left out"),
            }
        }
        out.push(Loaded { record, indexes });
    }
    Ok(out)
}

/// The writer thread: batches what is queued into one pipeline, retries a
/// failed batch (reconnecting) until it is written, then runs its `then`s.
fn writer(client: redis::Client, con: redis::Connection, ns: String, rx: Receiver<Write>, c: Counters) {
    let mut con = Some(con);
    let mut backoff = Duration::from_millis(50);
    while let Ok(first) = rx.recv() {
        let mut batch = vec![first];
        batch.extend(rx.try_iter().take(4095));
        let mut pipe = redis::pipe();
        for w in &batch {
            match w {
                Write::Call { id, record } => {
                    pipe.cmd("SET").arg(call_key(&ns, id)).arg(record.as_slice()).ignore();
                }
                Write::Delete { id } => {
                    pipe.cmd("DEL").arg(call_key(&ns, id)).arg(idx_key(&ns, id)).ignore();
                }
                Write::Fields { id, fields, .. } => {
                    if !fields.is_empty() {
                        let mut c = redis::cmd("HSET");
                        c.arg(idx_key(&ns, id));
                        for (f, v) in fields {
                            c.arg(f).arg(v.as_slice());
                        }
                        pipe.add_command(c).ignore();
                    }
                }
            }
        }
        let mut failed = false;
        loop {
            let result = match con.as_mut() {
                Some(c) => pipe.query::<()>(c),
                None => connect(&client).and_then(|mut c| {
                    let r = pipe.query::<()>(&mut c);
                    con = Some(c);
                    r
                }),
            };
            match result {
                Ok(()) => {
                    backoff = Duration::from_millis(50);
                    if failed {
                        c.recoveries.fetch_add(1, Relaxed);
                        tracing::warn!("redis: writes go through again");
                    }
                    break;
                }
                Err(e) => {
                    failed = true;
                    let n = c.errors.fetch_add(1, Relaxed);
                    if n < 10 || n.is_power_of_two() {
                        tracing::error!("redis: {e}; {} writes wait (retrying)", batch.len());
                    }
                    con = None;
                    std::thread::sleep(backoff);
                    backoff = (backoff * 2).min(Duration::from_secs(2));
                }
            }
        }
        c.batches.fetch_add(1, Relaxed);
        c.pending.fetch_sub(batch.len() as u64, Relaxed);
        for w in batch {
            if let Write::Fields { then, .. } = w {
                for f in then {
                    f();
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_password_in_the_url_is_not_logged() {
        assert_eq!(redacted("redis://user:secret@10.0.0.1:6379/0"), "redis://***@10.0.0.1:6379/0");
        assert_eq!(redacted("redis://127.0.0.1/"), "redis://127.0.0.1/");
    }
}
