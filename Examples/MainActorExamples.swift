import Herald

// MARK: Main actor

/// A settings screen's view model: a remote value and a remote list mirrored on the main
/// actor, and an event handled there, with no `Task { @MainActor in … }` hops.
@MainActor final class SettingsViewModel {
    let owner: MainActorValue<String>
    let todos: MainActorValue<[Todo]>
    private(set) var lastMessage = ""

    init(client: HeraldClient, owner: RemoteValue<String>, todos: RemoteList<Todo>) throws(HeraldClientError) {
        self.owner = owner.onMainActor()      // changes land on the main actor: SwiftUI-ready
        self.todos = todos.onMainActor()
        try client.subscribeOnMain(ChatLine.self, owner: self) { model, line, _ in
            model.lastMessage = line.text     // the model is main-actor state, not Sendable
        }
    }

    var title: String { "\(owner.value ?? "nobody"): \(todos.value?.count ?? 0) to do" }
}
