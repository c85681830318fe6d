/// Per-user connection counts (`UserLimits.connections`): a connection is charged to its
/// user's `UserAccount` when it authenticates, moved when it authenticates again as another
/// user, and released when it leaves; an account nothing is charged to is forgotten. Its
/// subscriptions are charged to the same account (`Session.account`) and move with it, so a
/// user is charged for the subscriptions its connections hold now.
extension Broker {
    /// Charges an authenticating connection to `user`'s account.
    /// - Returns: false, charging nothing, when the user already has its `connections`.
    func chargeConnection(of session: Session, to user: AuthUser) -> Bool {
        if let account = session.account, account.name == user.name { return true }
        let account = accounts[user.name] ?? UserAccount(name: user.name)
        guard account.connections < user.limits.connections else { return false }
        releaseConnection(of: session)
        take(session, into: account)
        return true
    }

    /// Moves a live connection's charge to `user` without refusing (SIGHUP renamed its user,
    /// or turned auth on): lowered limits apply to new `hello`s, not to who is connected.
    func moveConnection(of session: Session, to user: AuthUser) {
        if let account = session.account, account.name == user.name { return }
        releaseConnection(of: session)
        take(session, into: accounts[user.name] ?? UserAccount(name: user.name))
    }

    /// Charges a connection and its live subscriptions to `account`.
    private func take(_ session: Session, into account: UserAccount) {
        account.connections += 1
        account.subscriptions += session.subscriptions.count
        account.argsBytes += session.argsBytes
        accounts[account.name] = account
        session.account = account
    }

    /// Takes a connection's charge, and that of its live subscriptions, off its account (it
    /// left, authenticated as another user, or auth was turned off).
    func releaseConnection(of session: Session) {
        session.rate = nil
        guard let account = session.account else { return }
        session.account = nil
        account.connections -= 1
        account.subscriptions -= session.subscriptions.count
        account.argsBytes -= session.argsBytes
        if account.isEmpty, accounts[account.name] === account { accounts[account.name] = nil }
    }

    /// Connections charged to a user now (0 when it has no account); for tests and `stats`.
    public func connectionCount(ofUser name: String) -> Int {
        accounts[name]?.connections ?? 0
    }
}
