//! The NG requests the tests send, as a SIP proxy's module would build
//! them (feature `ng`).

use srtpgate_ng::Value;

/// An `offer` request.
pub fn offer(call_id: &str, from_tag: &str, sdp: &str) -> Value {
    Value::dict().with("command", "offer").with("call-id", call_id).with("from-tag", from_tag).with("sdp", sdp)
}

/// An `answer` request.
pub fn answer(call_id: &str, from_tag: &str, to_tag: &str, sdp: &str) -> Value {
    offer(call_id, from_tag, sdp).with("command", "answer").with("to-tag", to_tag)
}

/// A `delete` request.
pub fn delete(call_id: &str) -> Value {
    Value::dict().with("command", "delete").with("call-id", call_id)
}
