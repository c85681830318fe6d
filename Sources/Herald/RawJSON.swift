import Foundation

/// One JSON value exactly as it travelled on the wire (its UTF-8 bytes).
///
/// Why raw: the daemon copies `data` and `args` through byte for byte, so the client keeps
/// them as bytes too and decodes them only when (and into what) the caller asks. It is also
/// the untyped escape hatch for tools such as the `herald` CLI, which print values unchanged.
public struct RawJSON: Sendable, Hashable, CustomStringConvertible {
    /// The value's UTF-8 bytes, e.g. `{"id":42}`.
    public let bytes: [UInt8]

    /// Wraps bytes that are already one JSON value; they are not validated here (the daemon
    /// validates everything that is published and answers `bad_json` otherwise).
    /// - Parameter bytes: the UTF-8 text of one JSON value.
    public init(bytes: [UInt8]) {
        self.bytes = bytes
    }

    /// Wraps JSON text, e.g. `RawJSON("{\"text\":\"hi\"}")`, without checking it.
    ///
    /// Text that is not JSON makes the daemon answer `bad_json` without the request's `rid`
    /// (it cannot trust the frame), so an awaited call would only end by timing out: use
    /// ``init(validating:)`` for text from users or files.
    /// - Parameter text: the text of one JSON value.
    public init(_ text: String) {
        self.bytes = Array(text.utf8)
    }

    /// Wraps JSON text after checking that it is one JSON value.
    /// - Parameter text: the text, e.g. a command-line argument.
    /// - Throws: `HeraldClientError.encoding` with the parser's complaint.
    public init(validating text: String) throws(HeraldClientError) {
        let bytes = Array(text.utf8)
        do {
            _ = try JSONSerialization.jsonObject(with: Data(bytes), options: [.fragmentsAllowed])
        } catch {
            throw .encoding("not valid JSON: \(text.prefix(80))")
        }
        self.bytes = bytes
    }

    /// Encodes a value with Foundation's `JSONEncoder`.
    /// - Parameter value: any `Encodable` value.
    /// - Throws: `HeraldClientError.encoding` when the encoder refuses the value.
    public init<Value: Encodable>(encoding value: Value) throws(HeraldClientError) {
        do {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
            self.bytes = Array(try encoder.encode(value))
        } catch {
            throw .encoding(String(describing: error))
        }
    }

    /// JSON `null`.
    public static let null = RawJSON(bytes: Array("null".utf8))

    /// The JSON text.
    public var description: String { String(decoding: bytes, as: UTF8.self) }

    /// Decodes the value straight from its bytes (`PayloadDecoder`, the project's own JSON
    /// lexer); whatever that decoder does not take on the same terms as Foundation's
    /// `JSONDecoder` (a `Float`, `1.0` for an `Int`, malformed input) is decoded by `JSONDecoder`.
    /// - Parameter type: the type to decode.
    /// - Returns: the decoded value.
    /// - Throws: `HeraldClientError.decoding` naming the type and `JSONDecoder`'s complaint.
    public func decode<Value: Decodable>(as type: Value.Type = Value.self) throws(HeraldClientError) -> Value {
        // A `do`, not `try?`: an `Optional<Value>` costs a runtime metadata lookup per call here.
        do {
            return try PayloadDecoder.decode(Value.self, from: bytes)
        } catch {
            // Declined: `JSONDecoder` decides, and words the error.
        }
        do {
            return try JSONDecoder().decode(Value.self, from: Data(bytes))
        } catch {
            throw .decoding(type: String(describing: Value.self), channel: nil, message: String(describing: error))
        }
    }
}
