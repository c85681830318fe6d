/// One parsed HTTP/1.x request head (the monitor reads no bodies).
struct HTTPRequest: Sendable, Equatable {
    /// One header field as sent; names compare case-insensitively through `header(_:)`.
    struct Field: Sendable, Equatable {
        /// The field name as sent (`Host`).
        let name: String
        /// The value with surrounding blanks removed.
        let value: String
    }

    /// The method token (`GET`); methods are case-sensitive in HTTP.
    let method: String
    /// The request target as sent (`/metrics?x=1`).
    let target: String
    /// The path part of the target, without query (`/metrics`).
    let path: String
    /// The minor version: 0 for HTTP/1.0, 1 for HTTP/1.1.
    let minorVersion: Int
    /// The header fields in order.
    let fields: [Field]

    /// The value of the first field called `name` (case-insensitive), or nil.
    func header(_ name: String) -> String? {
        let wanted = name.lowercased()
        return fields.first { $0.name.lowercased() == wanted }?.value
    }
}
