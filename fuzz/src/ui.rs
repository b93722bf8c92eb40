//! Fuzz logic of the management page's client messages (`srtpgate-ui`).
//!
//! The input is one WebSocket text message. `parse` never panics; a refusal
//! carries a short message; an accepted view pages any table without
//! panicking and within its limit; the coalescer's messages are JSON.

use srtpgate_ui::{parse, Action, CallRow, Coalescer, MAX_LIMIT};

/// The `ui_message` target.
pub fn ui_message(data: &[u8]) {
    match parse(data) {
        Err(e) => assert!(e.message.len() < 400, "refusal of {} bytes", e.message.len()),
        Ok(req) => {
            if let Action::View(v) = req.action {
                assert!(v.limit >= 1 && v.limit <= MAX_LIMIT);
                let rows: Vec<CallRow> = (0..20u64)
                    .map(|i| CallRow {
                        call_id: format!("c{i}"),
                        packets_in: i * 7 % 5,
                        age_s: i % 3,
                        ..Default::default()
                    })
                    .collect();
                let (page, matching) = v.page(&rows);
                assert!(page.len() <= v.limit && matching <= rows.len() && page.iter().all(|&i| i < rows.len()));
                let mut c = Coalescer::default();
                for m in c.diff(page.iter().map(|&i| &rows[i])) {
                    assert!(serde_json::from_str::<serde_json::Value>(&m).is_ok());
                }
            }
        }
    }
}
