export { ApiError, errors, idForStatus, type FieldErrors } from './errors.js'
export { formatTimestamp, systemClock, type Clock } from './time.js'
