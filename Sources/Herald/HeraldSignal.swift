/// A signal type with a kind: a typed handler is offered only signals of its own kind, so
/// several signal types can share a level (`app.settings`) without each handler reporting a
/// decoding error for every other kind.
///
/// The kind travels as the payload's top-level `"kind"` field. `signal(_:)` adds it when the
/// encoded value has none (a value that encodes its own `kind` must carry this one); untyped
/// senders add it by hand: `{"kind":"save","field":"name"}`. A typed handler for a
/// `HeraldSignal` answers `.pass` at once, without calling the handler or reporting anything,
/// for an offer whose payload has another kind or none; a payload of its kind that does not
/// decode is reported (`.decoding`), as before. Signal types that are only `HeraldEvent`s are
/// matched by decoding alone.
public protocol HeraldSignal: HeraldEvent {
    /// The kind, e.g. `"save"`; unique among the signal types handled at a level.
    static var kind: String { get }
}

extension HeraldClient {
    /// The payload of a typed signal: its JSON, with `"kind"` first for a `HeraldSignal`.
    /// - Throws: `.encoding` when the value does not encode, or a `HeraldSignal` is not a JSON
    ///   object or encodes another kind.
    static func signalPayload<Signal: HeraldEvent>(_ value: Signal) throws(HeraldClientError) -> RawJSON {
        let data = try RawJSON(encoding: value)
        guard let kinded = Signal.self as? any HeraldSignal.Type else { return data }
        let kind = kinded.kind
        guard let object = ServerFrame(data.bytes) else {
            throw .encoding("\(Signal.self) is a HeraldSignal and must encode as a JSON object")
        }
        if let own = object.raw("kind") {
            guard own == (try RawJSON(encoding: kind)) else {
                throw .encoding("\(Signal.self) encodes kind \(own), not \(kind)")
            }
            return data
        }
        var bytes = Array("{\"kind\":".utf8) + (try RawJSON(encoding: kind)).bytes
        // After the `{`: `,` and the rest, unless the object was empty.
        guard let open = data.bytes.firstIndex(of: UInt8(ascii: "{")) else { return data }
        let rest = data.bytes[(open + 1)...]
        if object.keys.isEmpty {
            bytes.append(UInt8(ascii: "}"))
        } else {
            bytes.append(UInt8(ascii: ","))
            bytes += rest
        }
        return RawJSON(bytes: bytes)
    }

    /// Whether an offer is for `Signal`: always for a plain `HeraldEvent`; for a `HeraldSignal`
    /// only when the payload's `"kind"` is its kind.
    static func offerMatches<Signal: HeraldEvent>(_ data: RawJSON?, as type: Signal.Type) -> Bool {
        guard let kinded = Signal.self as? any HeraldSignal.Type else { return true }
        guard let data, let object = ServerFrame(data.bytes), let kind = object.raw("kind") else { return false }
        return kind == (try? RawJSON(encoding: kinded.kind))
    }
}
