import Herald

// The examples quoted in docs/client.md "Links", "Catching up" and "Calculated values".
// ExampleTests runs each against a real heraldd.

// MARK: Links

/// A pushed screen's signals go on to the screen below it, not to its name's parent: the
/// link is made again after every reconnect.
func pushScreen(_ client: HeraldClient, _ screen: Channel, over below: Channel) async throws(HeraldClientError) {
    try await client.link(screen, to: below)
}

/// Popping the screen removes its link.
func popScreen(_ client: HeraldClient, _ screen: Channel) async throws(HeraldClientError) {
    try await client.unlink(screen)
}

// MARK: Catching up

/// Follows the chat from the last line the app stored, and says whether anything was lost.
func resumeChat(_ client: HeraldClient, after seq: Int, onLine: @escaping @Sendable (ChatLine, Bool) -> Void) async throws(HeraldClientError) -> Subscription {
    let token = try client.subscribe(ChatLine.self, options: SubscriptionOptions(since: seq)) { line, meta in
        onLine(line, meta.isReplay)                   // replayed history first, then live lines
    }
    try await token.ready()
    if token.recovered == false {
        print("history did not reach back to \(seq): reload the chat")
    }
    return token
}

// MARK: Calculated values

/// A to-do item in a retained list.
struct Todo: Codable, Sendable, Equatable {
    var title: String
    var done: Bool
}

/// A label over a list and a value, chained through calculated values.
func openTodoLabel(_ todo: RemoteList<Todo>, owner: RemoteValue<String>) -> CalculatedValue<String> {
    let open = todo.map { items in items.filter { !$0.done }.count }   // follows every edit
    return combine(open, owner) { count, name in "\(name): \(count) open" }
}
