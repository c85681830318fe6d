import Herald

// MARK: Signals (responder chain)

/// A document's save request, raised deep in a screen and handled by whoever holds the document.
struct SaveRequest: HeraldSignal {
    static let channel = Channel("app", "editor", "doc")
    static let kind = "save"
    var revision: Int
}

/// The handler one level up: reports progress to the sender, then stops the signal there.
func handleSaves(_ client: HeraldClient) throws(HeraldClientError) -> Subscription {
    try client.handle(raw: Channel("app", "editor"), options: SubscriptionOptions(name: "editor")) { data, context in
        try context.callback(["saving": true])      // reaches the sender before the result
        return .stop
    }
}

/// The sender: progress as it comes, then who handled it.
func requestSave(_ client: HeraldClient, revision: Int) async throws(HeraldClientError) -> String? {
    let call = try client.signal(SaveRequest(revision: revision), timeout: .seconds(5))
    for await progress in call.callbacks { print("progress from", progress.from ?? "?") }
    return try await call.result().handledBy
}
