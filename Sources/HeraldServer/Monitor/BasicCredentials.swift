import Foundation

/// The user name and token of an `Authorization: Basic …` header (RFC 7617), as the locked
/// monitor takes them (`monitor_auth`): the user is an `auth.users` name, the password its token.
struct BasicCredentials: Equatable, Sendable {
    /// The user name (before the first colon).
    let user: String
    /// The token (everything after the first colon), as bytes.
    let token: [UInt8]

    /// Parses a header value; nil when it is absent, not `Basic`, not base64, or has no colon.
    /// The scheme name is case-insensitive, as RFC 9110 has it.
    /// - Parameter authorization: the `Authorization` header's value.
    init?(authorization: String?) {
        guard let authorization else { return nil }
        let parts = authorization.split(separator: " ", maxSplits: 1, omittingEmptySubsequences: true)
        guard parts.count == 2, parts[0].lowercased() == "basic",
              let decoded = Data(base64Encoded: parts[1].trimmingCharacters(in: .whitespaces)) else { return nil }
        let bytes = [UInt8](decoded)
        guard let colon = bytes.firstIndex(of: UInt8(ascii: ":")) else { return nil }
        user = String(decoding: bytes[..<colon], as: UTF8.self)
        token = Array(bytes[(colon + 1)...])
    }
}
