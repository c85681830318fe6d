/// The app's life: background and foreground (docs/client.md, "Network and app life").
///
/// Why explicit: an app suspended in the background keeps no socket alive (iOS freezes it,
/// and the daemon drops a silent connection after three heartbeats), so relying on the
/// reconnect backoff after coming back costs up to its cap. The app calls these from its scene
/// phase instead:
///
/// ```swift
/// .onChange(of: scenePhase) { _, phase in
///     if phase == .background { client.suspend() } else if phase == .active { client.resume() }
/// }
/// ```
extension HeraldClient {
    /// Closes the connection for now, keeping everything the client holds (subscriptions,
    /// mirrors, links, declared channels, locks) to restore on ``resume()``.
    ///
    /// Frames already handed to the client are written first (for up to half a second);
    /// answers still awaited fail with ``HeraldClientError/disconnected``; calls made while
    /// suspended fail with ``HeraldClientError/notConnected``. The state becomes
    /// ``ConnectionState/suspended``. Calling it again does nothing.
    public func suspend() {
        loop.setSuspended(true)
    }

    /// Reconnects after ``suspend()`` at once (no backoff) and restores everything; a
    /// subscription that had events catches up with `since` on the same daemon, and the state
    /// says ``ConnectionState/restored`` once everything is back. Without a `suspend()` it
    /// does nothing.
    public func resume() {
        loop.setSuspended(false)
    }

    /// Whether the app has the client suspended (between ``suspend()`` and ``resume()``).
    public var isSuspended: Bool { loop.suspendRequested }
}
