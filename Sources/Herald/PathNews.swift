/// What the network path monitor (or the transport's own connection) says about the device's
/// network, as the I/O thread acts on it (``HeraldClient`` "Network and app life").
enum PathNews: Sendable, Equatable {
    /// A usable path exists (`NWPath.Status.satisfied`, or the connection became viable again).
    case satisfied
    /// No usable path (`.unsatisfied`, `.requiresConnection`, or the connection not viable).
    case unsatisfied
    /// A better path than the connection's own is available (Wi-Fi after cellular):
    /// `NWConnection.betterPathUpdateHandler` said `true`.
    case betterPathAvailable
    /// The connection's own path stopped (false) or resumed (true) carrying data
    /// (`NWConnection.viabilityUpdateHandler`): nothing to do while not viable (TCP survives a
    /// short outage); once viable again the client pings at once, so a connection that died
    /// meanwhile is found now, not after three heartbeats.
    case viable(Bool)
}
