/// What the broker made of the HTTP Basic credentials of a monitor request
/// (`monitor_auth`, issue 37): the monitor answers 200, 403, 401 or 429 from it, or runs the
/// KDF off the loop and asks again (`Broker.completeMonitorCheck`).
public enum MonitorAccess: Sendable {
    /// A user with `admin: true`: served.
    case admin
    /// A user whose token is right but who is not an admin: 403.
    case notAdmin
    /// An unknown user or a wrong token, counted against the address like a failed `hello`: 401.
    case rejected
    /// The address (and user) is blocked after failed attempts, or has none left: 429.
    case blocked
    /// Only a slow credential can judge the token: verify it off the loop, then
    /// `completeMonitorCheck`. The check holds one of the key's attempts until then.
    case verify(PendingVerification)
}
