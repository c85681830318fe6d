/// Watches the device's network path and reports changes (`PathNews`) from any thread.
///
/// Why a protocol: Apple platforms watch the path with `NWPathMonitor` (`SystemPathMonitor`),
/// which Linux cannot compile; Linux has no monitor by default, and tests drive the same
/// reconnect logic through a double that sends news by hand. The client starts its monitor
/// once, when it is created, and cancels it when it closes.
protocol PathMonitor: AnyObject, Sendable {
    /// Starts watching; `onNews` is called on an arbitrary thread for each change (the first
    /// call may report the path as it is now).
    /// - Parameter onNews: what to call with each change; must not block.
    func start(_ onNews: @escaping @Sendable (PathNews) -> Void)

    /// Stops watching; no call to `onNews` starts after it returns.
    func cancel()
}
