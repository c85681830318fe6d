import Foundation
import Testing
import HeraldBroker
import HeraldWire

/// Per-user `publish`/`subscribe` rules (PROTOCOL.md, Auth and permissions): which op needs
/// which, deny wins, wildcard requests must be covered whole, `$` names need explicit patterns.
@Suite struct PermissionTests {
    static let publishOps: [Op] = [.pub, .req, .set, .del, .touch, .append, .assign, .splice, .signal,
                                   .declare, .remove, .link, .unlink, .lock, .unlock]
    static let subscribeOps: [Op] = [.sub, .get, .channels, .locks, .presence]

    @Test func everyOpMapsToTheAccessTheContractNames() {
        for op in Op.allCases {
            let expected: ChannelAccess? = Self.publishOps.contains(op) ? .publish
                : Self.subscribeOps.contains(op) ? .subscribe : nil
            #expect(op.requiredAccess == expected, "\(op)")
        }
        #expect(Op.reply.requiredAccess == nil && Op.handled.requiredAccess == nil && Op.callback.requiredAccess == nil)
    }

    private func frame(_ op: Op, _ channel: String) -> String {
        #"{"op":"\#(op.rawValue)","ch":"\#(channel)","value":1,"index":0,"parent":"ok","timeout_ms":1,"rid":1}"#
    }

    /// Each governed op on a channel outside the user's allow list is `forbidden` and the
    /// connection lives; on an allowed channel it is not refused for permission.
    @Test(arguments: PermissionTests.publishOps + PermissionTests.subscribeOps)
    func governedOpIsForbiddenOutsideItsRuleAndAllowedInside(op: Op) {
        let limited = rule(allow: ["ok.>", "ok"])
        let harness = BrokerHarness(authConfig([
            user("pub-only", token: "p", publish: limited, subscribe: rule(allow: [])),
            user("sub-only", token: "s", publish: rule(allow: []), subscribe: limited),
        ]))
        let governing = op.requiredAccess == .publish ? "p" : "s"
        let other = op.requiredAccess == .publish ? "s" : "p"
        let s = harness.connect(token: governing)
        let refused = harness.request(s, frame(op, "secret.x"))
        #expect(refused["error"] as? String == "forbidden", "\(op) on secret.x: \(refused)")
        #expect(refused["op"] as? String == op.rawValue)
        #expect(!s.closeAfterFlush, "forbidden never closes")
        let allowedChannel = op == .channels ? "ok.>" : "ok.x"
        let allowed = harness.request(s, frame(op, allowedChannel))
        #expect(allowed["error"] as? String != "forbidden", "\(op) on ok.x: \(allowed)")
        let wrongKind = harness.connect(token: other)
        #expect(harness.request(wrongKind, frame(op, "ok.x"))["error"] as? String == "forbidden",
                "\(op) needs \(op == .sub ? "subscribe" : "its own") access, not the other")
    }

    /// `stats` is the exception among the channel-less ops: it needs `subscribe` on `$sys.>`
    /// (issue 12), so a user without rights is refused it.
    @Test func replyHandledCallbackUnsubAndSubsNeedNoPermissionButStatsNeedsDollarSys() {
        let nothing = rule(allow: [])
        let harness = BrokerHarness(authConfig([user("mute", token: "m", publish: nothing, subscribe: nothing)]))
        let s = harness.connect(token: "m")
        #expect(harness.request(s, #"{"op":"reply","to":"00","rid":1}"#)["ok"] as? String == "reply")
        #expect(harness.request(s, #"{"op":"handled","id":"g1","action":"pass"}"#)["error"] as? String == "not_found")
        #expect(harness.request(s, #"{"op":"callback","id":"g1"}"#)["error"] as? String == "not_found")
        #expect(harness.request(s, #"{"op":"unsub","all":true}"#)["ok"] as? String == "unsub")
        #expect(harness.request(s, #"{"op":"stats"}"#)["error"] as? String == "forbidden")
        #expect(harness.request(s, #"{"op":"subs"}"#)["ok"] as? String == "subs")
        #expect(harness.request(s, #"{"op":"remove","all":true}"#)["ok"] as? String == "remove", "no channel named")
    }

    @Test func denyWinsOverAllow() {
        let harness = BrokerHarness(authConfig([user("u", token: "t",
            publish: rule(allow: ["app.>"], deny: ["app.admin.>"]),
            subscribe: rule(allow: ["app.>"], deny: ["app.admin.>"]))]))
        let s = harness.connect(token: "t")
        #expect(harness.request(s, #"{"op":"pub","ch":"app.x","rid":1}"#)["ok"] as? String == "pub")
        #expect(harness.request(s, #"{"op":"pub","ch":"app.admin.x","rid":1}"#)["error"] as? String == "forbidden")
        #expect(harness.request(s, #"{"op":"set","ch":"app.admin.y","value":1}"#)["error"] as? String == "forbidden")
        #expect(harness.request(s, #"{"op":"get","ch":"app.admin.y"}"#)["error"] as? String == "forbidden")
        #expect(harness.request(s, #"{"op":"pub","ch":"app","rid":1}"#)["error"] as? String == "forbidden",
                "app.> does not match app itself")
    }

    @Test func missingAllowMeansEverythingButDenyStillApplies() {
        let harness = BrokerHarness(authConfig([user("u", token: "t", publish: rule(deny: ["locked.>"]))]))
        let s = harness.connect(token: "t")
        #expect(harness.request(s, #"{"op":"pub","ch":"any.where","rid":1}"#)["ok"] as? String == "pub")
        #expect(harness.request(s, #"{"op":"pub","ch":"locked.x","rid":1}"#)["error"] as? String == "forbidden")
        #expect(harness.subscribe(s, #""ch":">""#)["ok"] as? String == "sub", "subscribe is unrestricted")
    }

    @Test func wildcardSubscriptionMustBeCoveredByOneAllowPattern() {
        let harness = BrokerHarness(authConfig([user("u", token: "t", subscribe: rule(allow: ["app.>", "cars.*.moved"]))]))
        let s = harness.connect(token: "t")
        for allowed in ["app.*", "app.>", "app.a.*.c", "cars.*.moved", "cars.42.moved", "app.x"] {
            #expect(harness.subscribe(s, #""ch":"\#(allowed)""#)["ok"] as? String == "sub", "\(allowed)")
        }
        for refused in [">", "*", "*.x", "app", "cars.>", "cars.*.*", "*.*.moved", "cars.*"] {
            #expect(harness.subscribe(s, #""ch":"\#(refused)""#)["error"] as? String == "forbidden", "\(refused)")
        }
    }

    @Test func wildcardSubscriptionThatADenyPatternCanMatchIsRefusedNotFiltered() {
        let harness = BrokerHarness(authConfig([user("u", token: "t", subscribe: rule(allow: ["app.>"], deny: ["app.secret.>"]))]))
        let s = harness.connect(token: "t")
        #expect(harness.subscribe(s, #""ch":"app.>""#)["error"] as? String == "forbidden")
        #expect(harness.subscribe(s, #""ch":"app.*.x""#)["error"] as? String == "forbidden", "can match app.secret.x")
        #expect(harness.subscribe(s, #""ch":"app.public.>""#)["ok"] as? String == "sub")
        #expect(harness.subscribe(s, #""ch":"app.*""#)["ok"] as? String == "sub", "app.* cannot match app.secret.x")
    }

    @Test func reservedNamesNeedAnExplicitDollarPattern() {
        let harness = BrokerHarness(authConfig([
            user("all", token: "a", subscribe: rule(allow: [">"])),
            user("sys", token: "s", subscribe: rule(allow: ["$sys.>"])),
            user("free", token: "f", subscribe: rule(deny: [">"])),
        ]))
        let all = harness.connect(token: "a")
        #expect(harness.subscribe(all, #""ch":"$sys.>""#)["error"] as? String == "forbidden", "> does not reach $sys")
        #expect(harness.subscribe(all, #""ch":"$sys.client.connected""#)["error"] as? String == "forbidden")
        let sys = harness.connect(token: "s")
        #expect(harness.subscribe(sys, #""ch":"$sys.>""#)["ok"] as? String == "sub")
        let free = harness.connect(token: "f")
        #expect(harness.subscribe(free, #""ch":"$sys.>""#)["ok"] as? String == "sub", "a > deny does not reach $sys either")
        #expect(harness.subscribe(free, #""ch":"a""#)["error"] as? String == "forbidden")
    }

    @Test func channelsListingIsRefusedUnlessCovered() {
        let harness = BrokerHarness(authConfig([
            user("some", token: "s", subscribe: rule(allow: ["app.>"])),
            user("all", token: "a", subscribe: rule(allow: [">"])),
        ]))
        let some = harness.connect(token: "s")
        #expect(harness.request(some, #"{"op":"channels"}"#)["error"] as? String == "forbidden", "no ch means >")
        #expect(harness.request(some, #"{"op":"channels","ch":"app.>"}"#)["ok"] as? String == "channels")
        let all = harness.connect(token: "a")
        #expect(harness.request(all, #"{"op":"channels"}"#)["ok"] as? String == "channels")
    }

    @Test func linkNeedsPublishOnTheParentToo() {
        let harness = BrokerHarness(authConfig([user("u", token: "t", publish: rule(allow: ["ui.>"]))]))
        let s = harness.connect(token: "t")
        #expect(harness.request(s, #"{"op":"link","ch":"ui.a","parent":"ui.b"}"#)["ok"] as? String == "link")
        #expect(harness.request(s, #"{"op":"link","ch":"ui.c","parent":"admin"}"#)["error"] as? String == "forbidden")
    }

    @Test func lockOfOwnSubscriptionByNameNeedsNoChannel() {
        let harness = BrokerHarness(authConfig([user("u", token: "t", publish: rule(allow: []))]))
        let s = harness.connect(token: "t")
        harness.subscribe(s, #""ch":"x","sub":"n""#)
        #expect(harness.request(s, #"{"op":"lock","sub":"n"}"#)["ok"] as? String == "lock")
        #expect(harness.request(s, #"{"op":"lock","ch":"x"}"#)["error"] as? String == "forbidden")
    }

    @Test func invalidChannelsKeepTheirOwnError() {
        let harness = BrokerHarness(authConfig([user("u", token: "t", publish: rule(allow: ["a"]))]))
        let s = harness.connect(token: "t")
        #expect(harness.request(s, #"{"op":"pub","ch":"a..b"}"#)["error"] as? String == "bad_channel")
        #expect(harness.request(s, #"{"op":"pub"}"#)["error"] as? String == "missing_field")
    }
}

/// SIGHUP hands the broker new users (`applyAuthSettings`): permissions apply at once.
@Suite struct AuthReloadTests {
    @Test func revokedSubscriptionEndsWithARemovedFrame() {
        let harness = BrokerHarness(authConfig([user("u", token: "t")]))
        let s = harness.connect(token: "t")
        harness.subscribe(s, #""ch":"app.>","sub":"wide""#)
        harness.subscribe(s, #""ch":"app.public.x","sub":"narrow""#)
        harness.broker.config.auth = AuthSettings(users: [user("u", token: "t", subscribe: rule(allow: ["app.public.>"]))])
        harness.broker.applyAuthSettings(now: 1)
        let frames = harness.frames(s)
        #expect(frames.count == 1)
        #expect(frames.first?["removed"] as? String == "app.>")
        #expect(frames.first?["sub"] as? String == "wide")
        #expect(frames.first?["reason"] as? String == "forbidden")
        #expect(!s.closeAfterFlush)
        let subs = harness.request(s, #"{"op":"subs"}"#)["subs"] as? [[String: Any]]
        #expect(subs?.map { $0["sub"] as? String } == ["narrow"])
        let publisher = harness.connect(token: "t")
        #expect(harness.request(publisher, #"{"op":"pub","ch":"app.other","rid":1}"#)["receivers"] as? Int == 0)
        #expect(harness.subscribe(s, #""ch":"app.>""#)["error"] as? String == "forbidden")
    }

    @Test func removedUserOrChangedTokenIsForbiddenAndClosed() {
        let harness = BrokerHarness(authConfig([user("a", token: "ta"), user("b", token: "tb"), user("c", token: "tc")]))
        let a = harness.connect(token: "ta")
        let b = harness.connect(token: "tb")
        let c = harness.connect(token: "tc")
        let (pending, _) = harness.connectRaw()
        harness.broker.config.auth = AuthSettings(users: [user("a", token: "ta"), user("c", token: "new")])
        harness.broker.applyAuthSettings(now: 1)
        #expect(!a.closeAfterFlush && a.user?.name == "a")
        #expect(b.closeAfterFlush, "user removed")
        #expect(harness.frames(b).first?["error"] as? String == "forbidden")
        #expect(c.closeAfterFlush, "token changed")
        #expect(!pending.closeAfterFlush, "still within its auth deadline")
        #expect(harness.request(pending, #"{"op":"hello","token":"tc"}"#)["error"] as? String == "forbidden")
    }

    @Test func turningAuthOffFreesEveryoneAndTurningItOnClosesTokenlessConnections() {
        let harness = BrokerHarness()
        let anonymous = harness.connect()
        let withToken = harness.connect(token: "t")
        harness.broker.config.auth = AuthSettings(users: [user("u", token: "t", publish: rule(allow: ["x"]))])
        harness.broker.applyAuthSettings(now: 1)
        #expect(anonymous.closeAfterFlush)
        #expect(harness.frames(anonymous).first?["error"] as? String == "forbidden")
        #expect(!withToken.closeAfterFlush && withToken.user?.name == "u")
        #expect(harness.request(withToken, #"{"op":"pub","ch":"y"}"#)["error"] as? String == "forbidden")
        let (pending, _) = harness.connectRaw()
        #expect(!pending.isAuthenticated)
        harness.broker.config.auth = AuthSettings()
        harness.broker.applyAuthSettings(now: 2)
        #expect(pending.isAuthenticated && harness.broker.nextDeadline == nil)
        #expect(harness.request(withToken, #"{"op":"pub","ch":"y","rid":1}"#)["ok"] as? String == "pub")
    }
}

/// `max_locks`: locks per connection are bounded like subscriptions.
@Suite struct LockLimitTests {
    @Test func lockPastMaxLocksIsLimitAndRetakingIsFine() {
        var config = BrokerConfig(epoch: "e")
        config.maxLocks = 2
        let harness = BrokerHarness(config)
        let s = harness.connect()
        #expect(harness.request(s, #"{"op":"lock","ch":"a"}"#)["ok"] as? String == "lock")
        #expect(harness.request(s, #"{"op":"lock","ch":"b"}"#)["ok"] as? String == "lock")
        #expect(harness.request(s, #"{"op":"lock","ch":"c"}"#)["error"] as? String == "limit")
        #expect(harness.request(s, #"{"op":"lock","ch":"a"}"#)["ok"] as? String == "lock", "held already")
        #expect(harness.request(s, #"{"op":"lock","ch":"x","subs":["c9/a","c9/b"]}"#)["error"] as? String == "limit")
        let other = harness.connect()
        #expect(harness.request(other, #"{"op":"lock","ch":"c"}"#)["ok"] as? String == "lock", "per connection")
        #expect(harness.request(s, #"{"op":"unlock","ch":"b"}"#)["released"] as? Int == 1)
        #expect(harness.request(s, #"{"op":"lock","ch":"c"}"#)["ok"] as? String == "lock")
        #expect(harness.request(s, #"{"op":"stats"}"#)["locks"] as? Int == 3)
    }
}
