//! The few OpenTelemetry protobuf messages vigil sends, encoded by hand
//! (OTLP/HTTP with `application/x-protobuf`): an `ExportTraceServiceRequest`
//! holding one resource, one scope and its spans. Field numbers are those of
//! `opentelemetry/proto/trace/v1/trace.proto` and `common/v1/common.proto`.
//!
//! Pure encoding: no I/O, nothing read back.

/// An attribute value.
#[derive(Debug, Clone, PartialEq)]
pub enum AttrValue {
    Str(String),
    Bool(bool),
    Int(i64),
}

/// One finished span.
#[derive(Debug, Clone, PartialEq)]
pub struct Span {
    pub trace_id: [u8; 16],
    pub span_id: [u8; 8],
    pub parent: Option<[u8; 8]>,
    pub name: String,
    pub start_ns: u64,
    pub end_ns: u64,
    pub attributes: Vec<(String, AttrValue)>,
    /// `Some(message)`: the span failed (status code ERROR).
    pub error: Option<String>,
}

fn varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn key(out: &mut Vec<u8>, field: u32, wire: u8) {
    varint(out, (u64::from(field) << 3) | u64::from(wire));
}

fn bytes(out: &mut Vec<u8>, field: u32, data: &[u8]) {
    key(out, field, 2);
    varint(out, data.len() as u64);
    out.extend_from_slice(data);
}

fn uint(out: &mut Vec<u8>, field: u32, v: u64) {
    key(out, field, 0);
    varint(out, v);
}

fn fixed64(out: &mut Vec<u8>, field: u32, v: u64) {
    key(out, field, 1);
    out.extend_from_slice(&v.to_le_bytes());
}

fn key_value(k: &str, v: &AttrValue) -> Vec<u8> {
    let mut any = Vec::new();
    match v {
        AttrValue::Str(s) => bytes(&mut any, 1, s.as_bytes()),
        AttrValue::Bool(b) => uint(&mut any, 2, u64::from(*b)),
        AttrValue::Int(i) => uint(&mut any, 3, *i as u64),
    }
    let mut kv = Vec::new();
    bytes(&mut kv, 1, k.as_bytes());
    bytes(&mut kv, 2, &any);
    kv
}

fn span(s: &Span) -> Vec<u8> {
    let mut out = Vec::new();
    bytes(&mut out, 1, &s.trace_id);
    bytes(&mut out, 2, &s.span_id);
    if let Some(p) = &s.parent {
        bytes(&mut out, 4, p);
    }
    bytes(&mut out, 5, s.name.as_bytes());
    uint(&mut out, 6, 1); // SPAN_KIND_INTERNAL
    fixed64(&mut out, 7, s.start_ns);
    fixed64(&mut out, 8, s.end_ns.max(s.start_ns));
    for (k, v) in &s.attributes {
        bytes(&mut out, 9, &key_value(k, v));
    }
    let mut status = Vec::new();
    match &s.error {
        Some(message) => {
            bytes(&mut status, 2, message.as_bytes());
            uint(&mut status, 3, 2); // STATUS_CODE_ERROR
        }
        None => uint(&mut status, 3, 1), // STATUS_CODE_OK
    }
    bytes(&mut out, 15, &status);
    out
}

/// An `ExportTraceServiceRequest` of `spans` from service `service`.
pub fn export_request(service: &str, spans: &[Span]) -> Vec<u8> {
    let mut resource = Vec::new();
    bytes(
        &mut resource,
        1,
        &key_value("service.name", &AttrValue::Str(service.into())),
    );
    let mut scope = Vec::new();
    bytes(&mut scope, 1, b"vigil");
    bytes(&mut scope, 2, env!("CARGO_PKG_VERSION").as_bytes());
    let mut scope_spans = Vec::new();
    bytes(&mut scope_spans, 1, &scope);
    for s in spans {
        bytes(&mut scope_spans, 2, &span(s));
    }
    let mut resource_spans = Vec::new();
    bytes(&mut resource_spans, 1, &resource);
    bytes(&mut resource_spans, 2, &scope_spans);
    let mut request = Vec::new();
    bytes(&mut request, 1, &resource_spans);
    request
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints_and_fields_are_encoded_as_protobuf_says() {
        let mut out = Vec::new();
        varint(&mut out, 300);
        assert_eq!(out, [0xac, 0x02]);
        let mut out = Vec::new();
        bytes(&mut out, 5, b"turn");
        assert_eq!(out, [0x2a, 4, b't', b'u', b'r', b'n']);
        let mut out = Vec::new();
        fixed64(&mut out, 7, 1);
        assert_eq!(out, [0x39, 1, 0, 0, 0, 0, 0, 0, 0]);
        let kv = key_value("a", &AttrValue::Bool(true));
        assert_eq!(kv, [0x0a, 1, b'a', 0x12, 2, 0x10, 1]);
    }
}
