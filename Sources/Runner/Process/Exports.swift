// Jobs and commands work with the store's types (`Database`, `Migration`, `Row`) in every signature here,
// so importing Runner brings Store along.
@_exported import Store
