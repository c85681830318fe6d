// Linux stand-ins (scripts/darwin-typecheck) for the Network.framework declarations NetworkTransport*.swift use, written
// from Apple's documentation: only to type-check those files' own logic on Linux.
import Dispatch
import Foundation
@_exported import Security
public enum NWError: Error, CustomDebugStringConvertible, Sendable {
    case posix(Int32), dns(Int32), tls(OSStatus)
    public var debugDescription: String { "" }
}
public enum NWEndpoint: Sendable {
    public struct Host: Sendable { public init(_ string: String) {} }
    public struct Port: Sendable { public init?(rawValue: UInt16) {} }
    case hostPort(host: Host, port: Port)
    case unix(path: String)
}
public final class NWProtocolTCP {
    public final class Options { public init() {}; public var noDelay = false; public var connectionTimeout = 0 }
}
public final class NWProtocolTLS {
    public final class Options { public init() {}; public let securityProtocolOptions = sec_protocol_options_t() }
}
public final class NWParameters {
    public init(tls: NWProtocolTLS.Options?, tcp: NWProtocolTCP.Options = NWProtocolTCP.Options()) {}
}
public final class NWConnection: @unchecked Sendable {
    public enum State: Sendable { case setup, waiting(NWError), preparing, ready, failed(NWError), cancelled }
    public final class ContentContext: @unchecked Sendable { public static let defaultMessage = ContentContext() }
    public enum SendCompletion { case contentProcessed(@Sendable (NWError?) -> Void), idempotent }
    public init(to: NWEndpoint, using: NWParameters) {}
    public var stateUpdateHandler: (@Sendable (_ state: State) -> Void)?
    public var viabilityUpdateHandler: (@Sendable (_ isViable: Bool) -> Void)?
    public var betterPathUpdateHandler: (@Sendable (_ betterPathAvailable: Bool) -> Void)?
    public var currentPath: NWPath? { nil }
    public func start(queue: DispatchQueue) {}
    public func cancel() {}
    public func forceCancel() {}
    public func receive(minimumIncompleteLength: Int, maximumLength: Int,
                        completion: @escaping @Sendable (Data?, ContentContext?, Bool, NWError?) -> Void) {}
    public func send(content: Data?, contentContext: ContentContext = .defaultMessage, isComplete: Bool = true, completion: SendCompletion) {}
}
public struct NWPath: Sendable {
    public enum Status: Sendable, Equatable { case satisfied, unsatisfied, requiresConnection }
    public let status: Status
}
public final class NWPathMonitor: @unchecked Sendable {
    public init() {}
    public var pathUpdateHandler: (@Sendable (_ newPath: NWPath) -> Void)?
    public var currentPath: NWPath { NWPath(status: .unsatisfied) }
    public func start(queue: DispatchQueue) {}
    public func cancel() {}
}
