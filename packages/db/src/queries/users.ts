// Filled by the move of SQL into packages/db (issue 36).
export {}
