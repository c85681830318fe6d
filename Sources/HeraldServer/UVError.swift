import CLibUV

/// A libuv call that failed, with libuv's own name and text for the status code.
public struct UVError: Error, CustomStringConvertible, Sendable {
    /// What the daemon was doing, e.g. "bind 127.0.0.1:7400".
    public var context: String
    /// libuv's negative status code.
    public var status: Int32

    /// Wraps a libuv status.
    public init(_ context: String, _ status: Int32) {
        self.context = context
        self.status = status
    }

    /// `bind 127.0.0.1:7400: EADDRINUSE (address already in use)`.
    public var description: String {
        context + ": " + String(cString: uv_err_name(status)) + " (" + String(cString: uv_strerror(status)) + ")"
    }

    /// Throws when `status` is a libuv error (negative).
    static func check(_ status: Int32, _ context: @autoclosure () -> String) throws(UVError) {
        if status < 0 { throw UVError(context(), status) }
    }
}
