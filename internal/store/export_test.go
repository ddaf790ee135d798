package store

// SetReviseFault lets tests fail a revise between its steps.
func SetReviseFault(f func(step string) error) { reviseFault = f }
