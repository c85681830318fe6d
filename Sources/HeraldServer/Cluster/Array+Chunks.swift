extension Array {
    /// The elements in consecutive groups of `size` (a last, shorter group is left out): how
    /// the snapshot replies list their entries (`ClusterEngine.readSnapshot`, the `MirroredTable`s).
    func chunks(of size: Int) -> [[Element]] {
        stride(from: 0, to: count - size + 1, by: size).map { Array(self[$0..<($0 + size)]) }
    }
}
