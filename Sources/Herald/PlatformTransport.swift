// Which transport this platform compiles (docs/client.md, "Platforms"). Nothing else in the
// module names a platform: only the files of the chosen transport are inside `#if`.
#if canImport(Network)
/// Apple platforms: Network.framework, TLS through `NWProtocolTLS`, no OpenSSL.
typealias PlatformTransport = NetworkTransport
/// Apple platforms: a condition variable that Network.framework's callbacks also signal.
typealias PlatformWake = ConditionWake
/// Apple platforms: `NWPathMonitor` watches the network path.
func makeSystemPathMonitor() -> (any PathMonitor)? { SystemPathMonitor() }
#else
/// Linux: POSIX sockets and `poll`, TLS through OpenSSL (`HeraldTLS`).
typealias PlatformTransport = SocketTransport
/// Linux: a self-pipe in the same `poll` as the socket.
typealias PlatformWake = WakePipe
/// Linux: no path monitor (servers and CI have no roaming network); a lost connection waits
/// out the reconnect backoff.
func makeSystemPathMonitor() -> (any PathMonitor)? { nil }
#endif
