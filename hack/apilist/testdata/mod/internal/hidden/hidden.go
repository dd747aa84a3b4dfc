package hidden

type Thing struct{ Field int }

func Exported() {}
