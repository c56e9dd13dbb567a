/** The parameters every export takes (the export of one device's, and across devices). */
export interface ExportParams {
  format?: string | undefined
  from?: string | undefined
  to?: string | undefined
  sensor_id?: string | undefined
}
