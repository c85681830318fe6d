import COpenSSL
import Foundation

/// The opening handshake (RFC 6455, section 4.2) on the `ws_port` listener, judged from the
/// request head the monitor's parser read (`HTTPRequestParser`): an upgrade is accepted
/// with 101 and its `Sec-WebSocket-Accept`, or refused with the status that says why; a
/// plain `GET /herald.mjs` gets the JavaScript client.
enum WebSocketHandshake {
    /// What to answer a request head.
    enum Decision: Equatable {
        /// Switch protocols: send `response`, then speak frames.
        case upgrade(response: [UInt8])
        /// Answer with `response` and close (a refusal, or the JavaScript client).
        case answer(response: [UInt8])
    }

    /// The JavaScript client served at `/herald.mjs`: `clients/js/herald.mjs`, embedded by
    /// `scripts/embed-js` as `clientScriptText` (WebSocketClientScript.swift), so the daemon
    /// needs no file at run time.
    static let clientScript: [UInt8] = Array(clientScriptText.utf8)

    /// RFC 6455's GUID, appended to the key before hashing.
    static let guid = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"

    /// Judges `request` against the origins allowed (`ws_origins`: exact origins, or `*`);
    /// `script` is the JavaScript client served at `/herald.mjs`.
    static func decide(_ request: HTTPRequest, origins: [String], script: [UInt8]) -> Decision {
        let wantsUpgrade = request.header("Upgrade").map { tokens($0).contains("websocket") } ?? false
        guard wantsUpgrade else {
            if request.method == "GET" && request.path == "/herald.mjs" {
                guard !script.isEmpty else { return refuse(.notFound, "the JavaScript client is not built into this heraldd yet") }
                // A page imports the module across origins (the page's server is not the
                // daemon), and module scripts are fetched with CORS: the code is public and
                // no credentials go with it, so any origin may read it. Who may then connect
                // is `ws_origins`' decision, at the upgrade.
                var answer = HTTPResponse(status: .ok, contentType: "text/javascript; charset=utf-8", body: script)
                answer.headers = ["Access-Control-Allow-Origin: *", "X-Content-Type-Options: nosniff"]
                return .answer(response: answer.serialized())
            }
            return refuse(.notFound, "not found: this port speaks WebSocket (and serves /herald.mjs)")
        }
        guard request.method == "GET", request.minorVersion >= 1 else {
            return refuse(.badRequest, "a WebSocket upgrade is a GET over HTTP/1.1")
        }
        guard request.header("Connection").map({ tokens($0).contains("upgrade") }) ?? false else {
            return refuse(.badRequest, "Connection: Upgrade is missing")
        }
        guard request.header("Sec-WebSocket-Version") == "13" else {
            var answer = HTTPResponse.plain(.upgradeRequired, "WebSocket version 13 only")
            answer.headers = ["Sec-WebSocket-Version: 13"]
            return .answer(response: answer.serialized())
        }
        guard let key = request.header("Sec-WebSocket-Key"), isValidKey(key) else {
            return refuse(.badRequest, "Sec-WebSocket-Key must be 16 bytes in base64")
        }
        if let origin = request.header("Origin"), !allows(origins, origin) {
            return refuse(.forbidden, "origin not allowed (ws_origins)")
        }
        let head = "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            + "Sec-WebSocket-Accept: \(accept(key))\r\n\r\n"
        return .upgrade(response: Array(head.utf8))
    }

    /// Whether `origin` is in the list (exactly, or the list holds `*`). A browser always
    /// sends `Origin`; a request without it is not a browser's and is judged by its token.
    static func allows(_ origins: [String], _ origin: String) -> Bool {
        origins.contains("*") || origins.contains(origin)
    }

    /// `Sec-WebSocket-Accept`: base64 of the SHA-1 of the key and the GUID (libcrypto).
    static func accept(_ key: String) -> String {
        let input = Array((key + guid).utf8)
        var digest = [UInt8](repeating: 0, count: 20)
        var size: UInt32 = 0
        _ = EVP_Digest(input, input.count, &digest, &size, EVP_sha1(), nil)
        var encoded = [UInt8](repeating: 0, count: 32)
        let length = EVP_EncodeBlock(&encoded, digest, Int32(size))
        return String(decoding: encoded.prefix(Int(max(0, length))), as: UTF8.self)
    }

    /// A key is base64 of 16 bytes: 22 base64 characters and `==`.
    static func isValidKey(_ key: String) -> Bool {
        let bytes = Array(key.utf8)
        guard bytes.count == 24, bytes[22] == UInt8(ascii: "="), bytes[23] == UInt8(ascii: "=") else { return false }
        return bytes[..<22].allSatisfy { byte in
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                 UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "+"), UInt8(ascii: "/"): return true
            default: return false
            }
        }
    }

    /// A header value's comma-separated tokens, lower-cased.
    static func tokens(_ value: String) -> [String] {
        value.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces).lowercased() }
    }

    /// A plain-text refusal; the connection closes after it.
    static func refuse(_ status: HTTPStatus, _ text: String) -> Decision {
        .answer(response: HTTPResponse.plain(status, text).serialized())
    }
}
