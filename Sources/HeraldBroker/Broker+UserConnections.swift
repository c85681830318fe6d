/// Per-user connection counts (`UserLimits.connections`): a connection is charged to its
/// user's `UserAccount` when it authenticates, moved when it authenticates again as another
/// user, and released when it leaves; an account nothing is charged to is forgotten.
extension Broker {
    /// Charges an authenticating connection to `user`'s account.
    /// - Returns: false, charging nothing, when the user already has its `connections`.
    func chargeConnection(of session: Session, to user: AuthUser) -> Bool {
        if let account = session.account, account.name == user.name { return true }
        let account = accounts[user.name] ?? UserAccount(name: user.name)
        guard account.connections < user.limits.connections else { return false }
        releaseConnection(of: session)
        account.connections += 1
        accounts[user.name] = account
        session.account = account
        return true
    }

    /// Moves a live connection's charge to `user` without refusing (SIGHUP renamed its user,
    /// or turned auth on): lowered limits apply to new `hello`s, not to who is connected.
    func moveConnection(of session: Session, to user: AuthUser) {
        if let account = session.account, account.name == user.name { return }
        releaseConnection(of: session)
        let account = accounts[user.name] ?? UserAccount(name: user.name)
        account.connections += 1
        accounts[user.name] = account
        session.account = account
    }

    /// Takes a connection's charge off its account (it left, or auth was turned off).
    func releaseConnection(of session: Session) {
        guard let account = session.account else { return }
        session.account = nil
        account.connections -= 1
        if account.isEmpty, accounts[account.name] === account { accounts[account.name] = nil }
    }

    /// Connections charged to a user now (0 when it has no account); for tests and `stats`.
    public func connectionCount(ofUser name: String) -> Int {
        accounts[name]?.connections ?? 0
    }
}
