/**
 * Real Smart Citizen catalogue; sources:
 *  - fablabbcn/smartcitizen-api:db/data/sensors_without_default_keys.csv (parent sensors, 2018-2023 sensors, default keys)
 *  - fablabbcn/smartcitizen-api:db/data/kits.csv (all kit ids, names, descriptions, slugs)
 *  - fablabbcn/smartcitizen-api:db/migrate/20230704150532_refactor_kits.rb (how default_key / equation were derived)
 *  - fablabbcn/smartcitizen-api:spec/models/raw_storer_spec.rb (two versions: SCK 1.0/1.1 sensor_map, sensor names 3-21, equations)
 *  - fablabbcn/smartcitizen-api-docs:caches/kitsGET.txt, caches/devices1616GET.txt, caches/sensorsGET.txt, caches/measurementsGET.txt (2015 responses)
 *  - fablabbcn/smartcitizen-kit-2x:lib/Sensors/Sensors.h (platform sensor ids published by the SCK 2.x firmware, units)
 *  - fablabbcn/smartcitizen-data:names/SCDevice.json, blueprints/sck_21_sps30.json, scdata tests (SCD30 name)
 *  - fablabbcn/smartcitizen-docs (Atlas Scientific page: ids 42-49 names, units, measurement names/descriptions)
 *  - fablabbcn/smartcitizen-connector:tests (first sensor 3 DHT22, first measurement 7 battery)
 *  - real GET /v0/devices responses (2020 SCK 2.1 and 2022 SCK 2.1 with default_key + measurement objects) quoted in
 *    third-party clients (smartcitizen iOS preview data, ESSI-Lab DAB SmartCitizenKitMapper.java), and a 2019 sensor list gist by pral2a
 *
 * Notes:
 *  - Entries/fields marked "UNVERIFIED" or "reconstructed" were not found in any source and are plausible guesses.
 *  - Measurement ids >= 100 are NOT real platform ids (the real ids were not found); they are placeholders.
 *  - The real API lists measurements/sensors without ORDER BY (Postgres heap order): measurement 7 "battery" comes
 *    first because measurements 1-6 were edited later, not because 1-6 do not exist (they do; e.g. sensor 55 -> measurement 1).
 *  - Kit slugs are not unique in the source (kits 26 and 41-45 all use "sck:2,1").
 *  - Measurement descriptions are trimmed to their first sentence.
 */
export interface SeedMeasurement { id: number; name: string; description: string; definition: string | null }
export interface SeedSensor { id: number; parentId: number | null; name: string; description: string; unit: string | null; measurementId: number | null; defaultKey: string | null; datasheet: string | null; unitDefinition: string | null; equation: string | null; reverseEquation: string | null }
export interface SeedKit { id: number; slug: string; name: string; description: string; sensors: { sensorId: number; key: string }[] }

export const measurements: SeedMeasurement[] = [
  { id: 1, name: 'Air Temperature', description: 'Air temperature is a measure of how hot or cold the air is. It is the most commonly measured weather parameter.', definition: null },
  { id: 2, name: 'Relative Humidity', description: 'Relative humidity is a measure of the amount of moisture in the air relative to the total amount of moisture the air can hold.', definition: null },
  { id: 3, name: 'Light', description: 'Lux is a measure of how much light is spread over a given area.', definition: null },
  { id: 4, name: 'Noise Level', description: "dB's measure sound pressure difference between the average local pressure and the pressure in the sound wave.", definition: null },
  { id: 5, name: 'co', description: 'Carbon monoxide is a colorless, odorless, and tasteless gas.', definition: null }, // name as in the 2015 API; may have been renamed since
  { id: 6, name: 'no2', description: 'Nitrogen dioxide is a toxic gas.', definition: null }, // name as in the 2015 API; may have been renamed since
  { id: 7, name: 'battery', description: 'The SCK remaining battery level in percentage.', definition: null },
  { id: 8, name: 'pv panel', description: 'The SCK t solar panel energy volatge when you conect one.', definition: null }, // typos kept from source
  { id: 9, name: 'nets', description: 'The amount of Wi-Fi networks visible by the SCK.', definition: null },
  { id: 11, name: 'Voltage', description: 'Voltage, also known as electric pressure, electric tension, or (electric) potential difference, is the difference in electric potential between two points.', definition: null },
  { id: 13, name: 'PM 10', description: 'PM stands for particulate matter: the term for a mixture of solid particles and liquid droplets found in the air.', definition: null },
  { id: 14, name: 'PM 2.5', description: 'PM stands for particulate matter: the term for a mixture of solid particles and liquid droplets found in the air.', definition: null },
  { id: 25, name: 'Barometric Pressure', description: 'Barometric pressure is the pressure within the atmosphere of Earth.', definition: null },
  { id: 27, name: 'PM 1', description: 'PM stands for particulate matter: the term for a mixture of solid particles and liquid droplets found in the air.', definition: null },
  { id: 46, name: 'eCO2', description: 'Equivalent CO2 is the concentration of CO2 that would cause the same level of radiative forcing as a given type and concentration of greenhouse gas.', definition: null },
  { id: 47, name: 'TVOC', description: 'Total volatile organic compounds is a grouping of a wide range of organic chemical compounds to simplify reporting when these are present in ambient air or emissions.', definition: null },
  { id: 100, name: 'water temperature', description: 'Water temperature is a measure of how hot or cold the water is.', definition: null }, // UNVERIFIED id; name/description from smartcitizen-docs
  { id: 101, name: 'pH', description: 'pH is a numeric scale used to specify the acidity or basicity of an aqueous solution.', definition: null }, // UNVERIFIED id; name/description from smartcitizen-docs
  { id: 102, name: 'electrical conductivity', description: 'How strongly a given material opposes the flow of electric current.', definition: null }, // UNVERIFIED id; name/description from smartcitizen-docs
  { id: 103, name: 'specific gravity', description: 'The density of a substance to the density of a reference substance.', definition: null }, // UNVERIFIED id; name/description from smartcitizen-docs
  { id: 104, name: 'dissolved oxygen', description: 'Absolute measure of the concentration of oxygen that is dissolved in Water', definition: null }, // UNVERIFIED id; name/description from smartcitizen-docs
  { id: 105, name: 'oxygen saturation', description: 'Relative measure of the concentration of oxygen that is dissolved in Water', definition: null }, // UNVERIFIED id; name/description from smartcitizen-docs
  { id: 106, name: 'CO2', description: 'Carbon dioxide concentration in the air, measured with an NDIR sensor.', definition: null }, // UNVERIFIED id; placeholder description
  { id: 107, name: 'PM 4', description: 'PM stands for particulate matter: the term for a mixture of solid particles and liquid droplets found in the air.', definition: null }, // UNVERIFIED id
  { id: 108, name: 'PN 0.3', description: 'Number of particles with a diameter above 0.3 um in 0.1 litres of air.', definition: null }, // UNVERIFIED id; placeholder description
  { id: 109, name: 'PN 0.5', description: 'Number of particles with a diameter above 0.5 um in 0.1 litres of air.', definition: null }, // UNVERIFIED id; placeholder description
  { id: 110, name: 'PN 1', description: 'Number of particles with a diameter above 1 um in 0.1 litres of air.', definition: null }, // UNVERIFIED id; placeholder description
  { id: 111, name: 'PN 2.5', description: 'Number of particles with a diameter above 2.5 um in 0.1 litres of air.', definition: null }, // UNVERIFIED id; placeholder description
  { id: 112, name: 'PN 4', description: 'Number of particles with a diameter above 4 um in 0.1 litres of air.', definition: null }, // UNVERIFIED id; placeholder description
  { id: 113, name: 'PN 5', description: 'Number of particles with a diameter above 5 um in 0.1 litres of air.', definition: null }, // UNVERIFIED id; placeholder description
  { id: 114, name: 'PN 10', description: 'Number of particles with a diameter above 10 um in 0.1 litres of air.', definition: null }, // UNVERIFIED id; placeholder description
  { id: 115, name: 'Typical Particle Size', description: 'Typical size of the particles measured by the particulate matter sensor.', definition: null }, // UNVERIFIED id; placeholder description
  { id: 116, name: 'Formaldehyde', description: 'Formaldehyde (HCHO) concentration in the air.', definition: null }, // UNVERIFIED id; placeholder description
  { id: 117, name: 'VOC Index', description: 'Sensirion VOC index: relative indicator of volatile organic compounds compared to the recent average.', definition: null }, // UNVERIFIED id; placeholder description
  { id: 118, name: 'NOx Index', description: 'Sensirion NOx index: relative indicator of nitrogen oxides compared to the recent average.', definition: null }, // UNVERIFIED id; placeholder description
  { id: 119, name: 'UV-A', description: 'Ultraviolet A irradiance.', definition: null }, // UNVERIFIED id; placeholder description
  { id: 120, name: 'UV-B', description: 'Ultraviolet B irradiance.', definition: null }, // UNVERIFIED id; placeholder description
  { id: 121, name: 'UV-C', description: 'Ultraviolet C irradiance.', definition: null }, // UNVERIFIED id; placeholder description
  { id: 122, name: 'WiFi RSSI', description: 'Received signal strength of the WiFi network the kit is connected to.', definition: null }, // UNVERIFIED id; placeholder description
  { id: 123, name: 'SD Card', description: 'Whether an SD card is present in the kit.', definition: null }, // UNVERIFIED id; placeholder description
  { id: 124, name: 'Altitude', description: 'Height above sea level.', definition: null }, // UNVERIFIED id; placeholder description
  { id: 125, name: 'Latitude', description: 'Latitude reported by the GPS receiver.', definition: null }, // UNVERIFIED id; placeholder description
  { id: 126, name: 'Longitude', description: 'Longitude reported by the GPS receiver.', definition: null }, // UNVERIFIED id; placeholder description
  { id: 127, name: 'Speed', description: 'Ground speed reported by the GPS receiver.', definition: null }, // UNVERIFIED id; placeholder description
  { id: 128, name: 'GPS Fix Quality', description: 'Quality of the GPS position fix.', definition: null }, // UNVERIFIED id; placeholder description
  { id: 129, name: 'Horizontal Dilution of Precision', description: 'GPS horizontal dilution of precision.', definition: null }, // UNVERIFIED id; placeholder description
  { id: 130, name: 'Satellites', description: 'Number of satellites tracked by the GPS receiver.', definition: null }, // UNVERIFIED id; placeholder description
  { id: 131, name: 'Total Dissolved Solids', description: 'Total dissolved solids in water.', definition: null }, // UNVERIFIED id; placeholder description
  { id: 132, name: 'Salinity', description: 'Salinity of water.', definition: null }, // UNVERIFIED id; placeholder description
  { id: 133, name: 'Oxidation-Reduction Potential', description: 'Oxidation-reduction (redox) potential of water.', definition: null }, // UNVERIFIED id; placeholder description
  { id: 134, name: 'Soil Moisture', description: 'Water content of the soil.', definition: null }, // UNVERIFIED id; placeholder description
]

export const sensors: SeedSensor[] = [
  { id: 3, parentId: null, name: 'DHT22', description: 'A digital temperature and humidity sensor. It uses a capacitive humidity sensor and a thermistor to measure the surrounding air, and spits out a digital signal on the data pin (no analog input pins needed)', unit: null, measurementId: null, defaultKey: null, datasheet: null, unitDefinition: null, equation: null, reverseEquation: null },
  { id: 4, parentId: 3, name: 'DHT22 - Temperature', description: 'Temperature', unit: 'ºC', measurementId: 1, defaultKey: 'temp', datasheet: null, unitDefinition: null, equation: 'x', reverseEquation: 'x/10.0' },
  { id: 5, parentId: 3, name: 'DHT22 - Humidity', description: 'Humidity', unit: '%', measurementId: 2, defaultKey: 'hum', datasheet: null, unitDefinition: null, equation: 'x', reverseEquation: 'x/10.0' },
  { id: 6, parentId: null, name: 'PVD-P8001', description: 'LDR Analog Light Sensor', unit: '%', measurementId: 3, defaultKey: 'light', datasheet: null, unitDefinition: null, equation: 'x', reverseEquation: 'x/10.0' },
  // 7: kits 2 (SCK 1.0) and 3 (SCK 1.1) used different tables for this sensor; SCK 1.1 table kept (as in spec/models/raw_storer_spec.rb). SCK 1.0 table: Mathematician.table_calibration({0=>0,5=>45,10=>55,15=>63,20=>65,30=>67,40=>69,50=>70,60=>71,80=>72,90=>73,100=>74,130=>75,160=>76,190=>77,220=>78,260=>79,300=>80,350=>81,410=>82,450=>83,550=>84,600=>85,650=>86,750=>87,850=>88,950=>89,1100=>90,1250=>91,1375=>92,1500=>93,1650=>94,1800=>95,1900=>96,2000=>97,2125=>98,2250=>99,2300=>100,2400=>101,2525=>102,2650=>103},x)
  { id: 7, parentId: null, name: 'POM-3044P-R', description: 'Electret microphone with envelope follower sound pressure sensor (noise)', unit: 'dB', measurementId: 4, defaultKey: 'noise', datasheet: null, unitDefinition: null, equation: 'Mathematician.table_calibration({0=>50,2=>55,3=>57,6=>58,20=>59,40=>60,60=>61,75=>62,115=>63,150=>64,180=>65,220=>66,260=>67,300=>68,375=>69,430=>70,500=>71,575=>72,660=>73,720=>74,820=>75,900=>76,975=>77,1050=>78,1125=>79,1200=>80,1275=>81,1320=>82,1375=>83,1400=>84,1430=>85,1450=>86,1480=>87,1500=>88,1525=>89,1540=>90,1560=>91,1580=>92,1600=>93,1620=>94,1640=>95,1660=>96,1680=>97,1690=>98,1700=>99,1710=>100,1720=>101,1745=>102,1770=>103,1785=>104,1800=>105,1815=>106,1830=>107,1845=>108,1860=>109,1875=>110},x)', reverseEquation: 'x' },
  { id: 8, parentId: null, name: 'MICS-2710', description: 'MOS NO2 gas sensor', unit: 'kOhm (ppm)', measurementId: 6, defaultKey: 'no2', datasheet: null, unitDefinition: null, equation: 'x', reverseEquation: 'x/1000.0' },
  { id: 9, parentId: null, name: 'MICS-5525', description: 'MOS CO gas sensor', unit: 'kOhm (ppm)', measurementId: 5, defaultKey: 'co', datasheet: null, unitDefinition: null, equation: 'x', reverseEquation: 'x/1000.0' },
  // 10: named 'Battery' in 2015, 'Battery SCK 1.1' in 2019-2020, 'Battery SCK' since 2020-12
  { id: 10, parentId: null, name: 'Battery SCK', description: 'Custom Circuit', unit: '%', measurementId: 7, defaultKey: 'bat', datasheet: null, unitDefinition: null, equation: 'x', reverseEquation: 'x/10.0' },
  { id: 11, parentId: null, name: 'Solar Panel', description: 'Custom Circuit', unit: 'mV', measurementId: 8, defaultKey: 'panel', datasheet: null, unitDefinition: null, equation: 'x', reverseEquation: 'x/1000.0' },
  { id: 12, parentId: 19, name: 'HPP828E031', description: 'Temperature', unit: 'ºC', measurementId: 1, defaultKey: 'temp', datasheet: null, unitDefinition: null, equation: '(175.72 / 65536.0 * x) - 53', reverseEquation: 'x' },
  { id: 13, parentId: 19, name: 'HPP828E031', description: 'Humidity', unit: '%', measurementId: 2, defaultKey: 'hum', datasheet: null, unitDefinition: null, equation: '(125.0 / 65536.0  * x) + 7', reverseEquation: 'x' },
  // 14: named 'BH1730FVC' (unit 'Lux') until 2021-05
  { id: 14, parentId: null, name: 'BH1730FVC - Light', description: 'Digital Ambient Light Sensor', unit: 'lux', measurementId: 3, defaultKey: 'light', datasheet: null, unitDefinition: null, equation: 'x', reverseEquation: 'x/10.0' },
  { id: 15, parentId: 20, name: 'MiCS-4514', description: 'NO2', unit: 'kOhm/ppm', measurementId: 6, defaultKey: 'no2', datasheet: null, unitDefinition: null, equation: 'x', reverseEquation: 'x/1000.0' },
  { id: 16, parentId: 20, name: 'MiCS-4514', description: 'CO', unit: 'kOhm/ppm', measurementId: 5, defaultKey: 'co', datasheet: null, unitDefinition: null, equation: 'x', reverseEquation: 'x/1000.0' },
  // 17: description/unit assumed equal to sensor 10
  { id: 17, parentId: null, name: 'Battery', description: 'Custom Circuit', unit: '%', measurementId: 7, defaultKey: 'bat', datasheet: null, unitDefinition: null, equation: 'x', reverseEquation: 'x/10.0' },
  // 18: description/unit assumed equal to sensor 11
  { id: 18, parentId: null, name: 'Solar Panel', description: 'Custom Circuit', unit: 'mV', measurementId: 8, defaultKey: 'panel', datasheet: null, unitDefinition: null, equation: 'x', reverseEquation: 'x/1000.0' },
  { id: 19, parentId: null, name: 'HPP828E031 (SHT21)', description: 'Digital Temperature and Relative Humidity Sensor', unit: null, measurementId: null, defaultKey: null, datasheet: null, unitDefinition: null, equation: null, reverseEquation: null },
  { id: 20, parentId: null, name: 'MiCS4514', description: 'Gas Sensor', unit: null, measurementId: null, defaultKey: null, datasheet: null, unitDefinition: null, equation: null, reverseEquation: null },
  { id: 21, parentId: null, name: 'Microchip RN-131', description: '802.11 b/g WiFi', unit: '# networks', measurementId: 9, defaultKey: 'nets', datasheet: null, unitDefinition: null, equation: 'x', reverseEquation: 'x' },
  // 29: defaultKey guessed
  { id: 29, parentId: null, name: 'MEMS Mic', description: 'MEMS microphone with envelope follower sound pressure sensor (noise)', unit: 'dBC', measurementId: 4, defaultKey: 'noise', datasheet: null, unitDefinition: null, equation: null, reverseEquation: null },
  // 42: defaultKey guessed (lower-cased firmware short title)
  { id: 42, parentId: null, name: 'DS18B20', description: 'Submergible Water Temperature sensor', unit: '°C', measurementId: 100, defaultKey: 'ds_wat_temp', datasheet: null, unitDefinition: null, equation: null, reverseEquation: null },
  // 43: defaultKey guessed (lower-cased firmware short title)
  { id: 43, parentId: null, name: 'AS EZO PH', description: 'Atlas Scientific EZO™ pH', unit: 'PH', measurementId: 101, defaultKey: 'as_ph', datasheet: null, unitDefinition: null, equation: null, reverseEquation: null },
  { id: 44, parentId: null, name: 'AS EZO Conductivity', description: 'Atlas Scientific EZO™ Conductivity Probe', unit: null, measurementId: null, defaultKey: null, datasheet: null, unitDefinition: null, equation: null, reverseEquation: null },
  // 45: defaultKey guessed (lower-cased firmware short title)
  { id: 45, parentId: 44, name: 'AS EZO Electrical Conductivity', description: 'Atlas Scientific EZO™ Electrical Conductivity', unit: 'µS/cm', measurementId: 102, defaultKey: 'as_cond', datasheet: null, unitDefinition: null, equation: null, reverseEquation: null },
  // 46: defaultKey guessed (lower-cased firmware short title); double space kept from source
  { id: 46, parentId: 44, name: 'AS EZO  Specific Gravity', description: 'Atlas Scientific EZO™ Specific Gravity', unit: 'SG', measurementId: 103, defaultKey: 'as_sg', datasheet: null, unitDefinition: null, equation: null, reverseEquation: null },
  { id: 47, parentId: null, name: 'AS  EZO DO', description: 'Atlas Scientific EZO™ Dissolved Oxygen Probe', unit: null, measurementId: null, defaultKey: null, datasheet: null, unitDefinition: null, equation: null, reverseEquation: null },
  // 48: defaultKey guessed (lower-cased firmware short title)
  { id: 48, parentId: 47, name: 'AS  EZO Dissolved Oxygen', description: 'Atlas Scientific EZO™ Dissolved Oxygen', unit: 'mg/L', measurementId: 104, defaultKey: 'as_do', datasheet: null, unitDefinition: null, equation: null, reverseEquation: null },
  // 49: defaultKey guessed (lower-cased firmware short title)
  { id: 49, parentId: 47, name: 'AS  EZO Oxygen Saturation', description: 'Atlas Scientific EZO™ Oxygen Saturation', unit: '%', measurementId: 105, defaultKey: 'as_do_sat', datasheet: null, unitDefinition: null, equation: null, reverseEquation: null },
  // 50: name reconstructed from firmware/platform naming pattern (not verified); defaultKey guessed (lower-cased firmware short title)
  { id: 50, parentId: null, name: 'Chirp Soil Moisture', description: 'I2C Soil Moisture Sensor (Chirp)', unit: '%', measurementId: 134, defaultKey: 'chrp_mois', datasheet: null, unitDefinition: null, equation: null, reverseEquation: null },
  // 51: name reconstructed from firmware/platform naming pattern (not verified); defaultKey guessed (lower-cased firmware short title)
  { id: 51, parentId: null, name: 'AS EZO Temperature', description: 'Atlas Scientific EZO™ Temperature', unit: 'ºC', measurementId: 100, defaultKey: 'as_temp', datasheet: null, unitDefinition: null, equation: null, reverseEquation: null },
  { id: 52, parentId: null, name: 'ICS43432', description: 'I2S Digital Mems Microphone with custom Audio Processing Algorithm', unit: null, measurementId: null, defaultKey: null, datasheet: null, unitDefinition: null, equation: null, reverseEquation: null },
  // 53: some recent clients call it 'TDK ICS43432 - Noise Level'
  { id: 53, parentId: 52, name: 'ICS43432 - Noise', description: 'I2S Digital Mems Microphone with custom Audio Processing Algorithm', unit: 'dBA', measurementId: 4, defaultKey: 'noise_dba', datasheet: null, unitDefinition: null, equation: null, reverseEquation: null },
  { id: 54, parentId: null, name: 'Sensirion SHT31', description: 'Digital relative humidity and air temperature sensor', unit: null, measurementId: null, defaultKey: null, datasheet: null, unitDefinition: null, equation: null, reverseEquation: null },
  { id: 55, parentId: 54, name: 'Sensirion SHT31 - Temperature', description: 'Temperature', unit: 'ºC', measurementId: 1, defaultKey: 't', datasheet: null, unitDefinition: null, equation: null, reverseEquation: null },
  { id: 56, parentId: 54, name: 'Sensirion SHT31 - Humidity', description: 'Humidity', unit: '%', measurementId: 2, defaultKey: 'h', datasheet: null, unitDefinition: null, equation: null, reverseEquation: null },
  { id: 57, parentId: null, name: 'MPL3115A2', description: 'Digital Barometric Pressure Sensor', unit: null, measurementId: null, defaultKey: null, datasheet: null, unitDefinition: null, equation: null, reverseEquation: null },
  // 58: unit was 'K Pa' before 2023-07
  { id: 58, parentId: 57, name: 'NXP MPL3115A2 - Barometric Pressure', description: 'Digital Barometric Pressure Sensor', unit: 'kPa', measurementId: 25, defaultKey: 'bar', datasheet: null, unitDefinition: null, equation: null, reverseEquation: null },
  { id: 59, parentId: null, name: 'SCK Gases Pro Board', description: 'SCK Gases Pro Board: Alphasense Series B 3 Channel Driver', unit: null, measurementId: null, defaultKey: null, datasheet: null, unitDefinition: null, equation: null, reverseEquation: null },
  { id: 60, parentId: 59, name: 'NO2-B43F', description: 'Alphasense Nitrogen Dioxide + Ozone', unit: null, measurementId: null, defaultKey: null, datasheet: null, unitDefinition: null, equation: null, reverseEquation: null },
  // 61: name from 2019 gist; description/measurement/key guessed
  { id: 61, parentId: 60, name: 'NO2-B43F-MAIN', description: 'Alphasense NO2-B43F working electrode', unit: 'mV', measurementId: 11, defaultKey: 'gb_2w', datasheet: null, unitDefinition: null, equation: null, reverseEquation: null },
  { id: 62, parentId: 60, name: 'NO2-B43F-AUX', description: 'Alphasense NO2-B43F auxiliary electrode', unit: 'mV', measurementId: 11, defaultKey: 'gb_2a', datasheet: null, unitDefinition: null, equation: null, reverseEquation: null },
  { id: 63, parentId: 59, name: 'CO-B4F', description: 'Alphasense Carbon Monoxide + Ozone', unit: null, measurementId: null, defaultKey: null, datasheet: null, unitDefinition: null, equation: null, reverseEquation: null },
  { id: 64, parentId: 63, name: 'CO-B4F-MAIN', description: 'Alphasense CO-B4F working electrode', unit: 'mV', measurementId: 11, defaultKey: 'gb_1w', datasheet: null, unitDefinition: null, equation: null, reverseEquation: null },
  { id: 65, parentId: 63, name: 'CO-B4F-AUX', description: 'Alphasense CO-B4F auxiliary electrode', unit: 'mV', measurementId: 11, defaultKey: 'gb_1a', datasheet: null, unitDefinition: null, equation: null, reverseEquation: null },
  { id: 66, parentId: 59, name: 'OXB431', description: 'Alphasense Ozone', unit: null, measurementId: null, defaultKey: null, datasheet: null, unitDefinition: null, equation: null, reverseEquation: null },
  { id: 67, parentId: 66, name: 'OXB431-MAIN', description: 'Alphasense OX-B431 working electrode', unit: 'mV', measurementId: 11, defaultKey: 'gb_3w', datasheet: null, unitDefinition: null, equation: null, reverseEquation: null },
  { id: 68, parentId: 66, name: 'OXB431-AUX', description: 'Alphasense OX-B431 auxiliary electrode', unit: 'mV', measurementId: 11, defaultKey: 'gb_3a', datasheet: null, unitDefinition: null, equation: null, reverseEquation: null },
  { id: 69, parentId: null, name: 'SCK PM Board', description: 'SCK PM Driver: Dual Platfower PMSX003 driver', unit: null, measurementId: null, defaultKey: null, datasheet: null, unitDefinition: null, equation: null, reverseEquation: null },
  { id: 70, parentId: 69, name: 'PMS5003_A', description: 'Plantower PMS5003 PM 10/2.5/1 sensor', unit: null, measurementId: null, defaultKey: null, datasheet: null, unitDefinition: null, equation: null, reverseEquation: null },
  // 71: platform (2019 gist by pral2a) names this id PM2.5/PM10/PM1 in that order, while Sensors.h maps 71/72/73 to PM1/PM2.5/PM10; platform naming kept; defaultKey guessed (lower-cased firmware short title)
  { id: 71, parentId: 70, name: 'PMS5003_A-PM2.5', description: 'Particle Matter PM 2.5', unit: 'ug/m3', measurementId: 14, defaultKey: 'ext_pm_a_25', datasheet: null, unitDefinition: null, equation: null, reverseEquation: null },
  // 72: defaultKey guessed (lower-cased firmware short title)
  { id: 72, parentId: 70, name: 'PMS5003_A-PM10', description: 'Particle Matter PM 10', unit: 'ug/m3', measurementId: 13, defaultKey: 'ext_pm_a_10', datasheet: null, unitDefinition: null, equation: null, reverseEquation: null },
  // 73: defaultKey guessed (lower-cased firmware short title)
  { id: 73, parentId: 70, name: 'PMS5003_A-PM1', description: 'Particle Matter PM 1', unit: 'ug/m3', measurementId: 27, defaultKey: 'ext_pm_a_1', datasheet: null, unitDefinition: null, equation: null, reverseEquation: null },
  { id: 74, parentId: 69, name: 'PMS5003_B', description: 'Plantower PMS5003 PM 10/2.5/1 sensor', unit: null, measurementId: null, defaultKey: null, datasheet: null, unitDefinition: null, equation: null, reverseEquation: null },
  // 75: platform (2019 gist by pral2a) names this id PM2.5/PM10/PM1 in that order, while Sensors.h maps 71/72/73 to PM1/PM2.5/PM10; platform naming kept; defaultKey guessed (lower-cased firmware short title)
  { id: 75, parentId: 74, name: 'PMS5003_B-PM2.5', description: 'Particle Matter PM 2.5', unit: 'ug/m3', measurementId: 14, defaultKey: 'ext_pm_b_25', datasheet: null, unitDefinition: null, equation: null, reverseEquation: null },
  // 76: defaultKey guessed (lower-cased firmware short title)
  { id: 76, parentId: 74, name: 'PMS5003_B-PM10', description: 'Particle Matter PM 10', unit: 'ug/m3', measurementId: 13, defaultKey: 'ext_pm_b_10', datasheet: null, unitDefinition: null, equation: null, reverseEquation: null },
  // 77: defaultKey guessed (lower-cased firmware short title)
  { id: 77, parentId: 74, name: 'PMS5003_B-PM1', description: 'Particle Matter PM 1', unit: 'ug/m3', measurementId: 27, defaultKey: 'ext_pm_b_1', datasheet: null, unitDefinition: null, equation: null, reverseEquation: null },
  { id: 78, parentId: null, name: 'Ext SHT31', description: 'External digital relative humidity and air temperature sensor', unit: null, measurementId: null, defaultKey: null, datasheet: null, unitDefinition: null, equation: null, reverseEquation: null },
  // 79: defaultKey guessed (lower-cased firmware short title)
  { id: 79, parentId: 78, name: 'Ext SHT31 - Temperature', description: 'Temperature', unit: 'ºC', measurementId: 1, defaultKey: 'ext_temp', datasheet: null, unitDefinition: null, equation: null, reverseEquation: null },
  // 80: defaultKey guessed (lower-cased firmware short title)
  { id: 80, parentId: 78, name: 'Ext SHT31 - Humidity', description: 'Humidity', unit: '%', measurementId: 2, defaultKey: 'ext_hum', datasheet: null, unitDefinition: null, equation: null, reverseEquation: null },
  { id: 81, parentId: 20, name: 'MiCS-4514-NO2-CON', description: 'MICS Nitrogen Dioxide', unit: 'ppb', measurementId: 6, defaultKey: 'mics_4514_no2', datasheet: null, unitDefinition: null, equation: null, reverseEquation: null },
  { id: 82, parentId: 20, name: 'MiCS-4514-CO-CON', description: 'MICS Carbon Monoxide', unit: 'ppm', measurementId: 5, defaultKey: 'mics_4514_co', datasheet: null, unitDefinition: null, equation: null, reverseEquation: null },
  { id: 86, parentId: 69, name: 'PMS5003_AVG', description: 'PM Board with dual PMS5003 PM 10/2.5/1 sensors', unit: null, measurementId: null, defaultKey: null, datasheet: null, unitDefinition: null, equation: null, reverseEquation: null },
  { id: 87, parentId: 86, name: 'Plantower PMS5003 - PM2.5', description: 'Particle Matter PM 2.5', unit: 'ug/m3', measurementId: 14, defaultKey: 'pm_avg_2.5', datasheet: null, unitDefinition: null, equation: null, reverseEquation: null },
  { id: 88, parentId: 86, name: 'Plantower PMS5003 - PM10', description: 'Particle Matter PM 10', unit: 'ug/m3', measurementId: 13, defaultKey: 'pm_avg_10', datasheet: null, unitDefinition: null, equation: null, reverseEquation: null },
  { id: 89, parentId: 86, name: 'Plantower PMS5003 - PM1.0', description: 'Particle Matter PM 1', unit: 'ug/m3', measurementId: 27, defaultKey: 'pm_avg_1', datasheet: null, unitDefinition: null, equation: null, reverseEquation: null },
  // 96: name from 2019 gist; description/measurement/key guessed
  { id: 96, parentId: null, name: 'DS18B20', description: 'PM board Dallas Temperature', unit: '°C', measurementId: 100, defaultKey: 'dallas_temp', datasheet: null, unitDefinition: null, equation: null, reverseEquation: null },
  // 99: description reconstructed; defaultKey guessed (lower-cased firmware short title)
  { id: 99, parentId: 70, name: 'PMS5003_A_PN0.3', description: 'Particle Number PN 0.3', unit: '#/0.1l', measurementId: 108, defaultKey: 'ext_pn_a_03', datasheet: null, unitDefinition: null, equation: null, reverseEquation: null },
  { id: 100, parentId: 70, name: 'PMS5003_A_PN0.5', description: 'Particle Number PN 0.5', unit: '#/0.1l', measurementId: 109, defaultKey: 'ext_pn_a_05', datasheet: null, unitDefinition: null, equation: null, reverseEquation: null },
  { id: 101, parentId: 70, name: 'PMS5003_A_PN1.0', description: 'Particle Number PN 1.0', unit: '#/0.1l', measurementId: 110, defaultKey: 'ext_pn_a_1', datasheet: null, unitDefinition: null, equation: null, reverseEquation: null },
  { id: 102, parentId: 70, name: 'PMS5003_A_PN2.5', description: 'Particle Number PN 2.5', unit: '#/0.1l', measurementId: 111, defaultKey: 'ext_pn_a_25', datasheet: null, unitDefinition: null, equation: null, reverseEquation: null },
  { id: 103, parentId: 70, name: 'PMS5003_A_PN5.0', description: 'Particle Number PN 5.0', unit: '#/0.1l', measurementId: 113, defaultKey: 'ext_pn_a_5', datasheet: null, unitDefinition: null, equation: null, reverseEquation: null },
  { id: 104, parentId: 70, name: 'PMS5003_A_PN10.0', description: 'Particle Number PN 10.0', unit: '#/0.1l', measurementId: 114, defaultKey: 'ext_pn_a_10', datasheet: null, unitDefinition: null, equation: null, reverseEquation: null },
  // 105: description reconstructed; defaultKey guessed (lower-cased firmware short title)
  { id: 105, parentId: 74, name: 'PMS5003_B_PN0.3', description: 'Particle Number PN 0.3', unit: '#/0.1l', measurementId: 108, defaultKey: 'ext_pn_b_03', datasheet: null, unitDefinition: null, equation: null, reverseEquation: null },
  { id: 106, parentId: 74, name: 'PMS5003_B_PN0.5', description: 'Particle Number PN 0.5', unit: '#/0.1l', measurementId: 109, defaultKey: 'ext_pn_b_05', datasheet: null, unitDefinition: null, equation: null, reverseEquation: null },
  { id: 107, parentId: 74, name: 'PMS5003_B_PN1.0', description: 'Particle Number PN 1.0', unit: '#/0.1l', measurementId: 110, defaultKey: 'ext_pn_b_1', datasheet: null, unitDefinition: null, equation: null, reverseEquation: null },
  { id: 108, parentId: 74, name: 'PMS5003_B_PN2.5', description: 'Particle Number PN 2.5', unit: '#/0.1l', measurementId: 111, defaultKey: 'ext_pn_b_25', datasheet: null, unitDefinition: null, equation: null, reverseEquation: null },
  { id: 109, parentId: 74, name: 'PMS5003_B_PN5.0', description: 'Particle Number PN 5.0', unit: '#/0.1l', measurementId: 113, defaultKey: 'ext_pn_b_5', datasheet: null, unitDefinition: null, equation: null, reverseEquation: null },
  { id: 110, parentId: 74, name: 'PMS5003_B_PN10.0', description: 'Particle Number PN 10.0', unit: '#/0.1l', measurementId: 114, defaultKey: 'ext_pn_b_10', datasheet: null, unitDefinition: null, equation: null, reverseEquation: null },
  { id: 111, parentId: null, name: 'AMS CCS811', description: 'Digital gas sensor for monitoring indoor air quality', unit: null, measurementId: null, defaultKey: null, datasheet: null, unitDefinition: null, equation: null, reverseEquation: null },
  { id: 112, parentId: 111, name: 'AMS CCS811 - eCO2', description: 'Equivalent Carbon Dioxide Digital Indoor Sensor', unit: 'ppm', measurementId: 46, defaultKey: 'eco2', datasheet: null, unitDefinition: null, equation: null, reverseEquation: null },
  { id: 113, parentId: 111, name: 'AMS CCS811 - TVOC', description: 'Total Volatile Organic Compounds Digital Indoor Sensor', unit: 'ppb', measurementId: 47, defaultKey: 'tvoc', datasheet: null, unitDefinition: null, equation: null, reverseEquation: null },
  { id: 114, parentId: null, name: 'PMS5003', description: 'PM PMS5003 PM 10/2.5/1 sensors', unit: null, measurementId: null, defaultKey: null, datasheet: null, unitDefinition: null, equation: null, reverseEquation: null },
  { id: 115, parentId: 114, name: 'PMS5003-PM2.5', description: 'Particle Matter PM 2.5', unit: 'ug/m3', measurementId: 14, defaultKey: 'pm25', datasheet: null, unitDefinition: null, equation: null, reverseEquation: null },
  { id: 116, parentId: 114, name: 'PMS5003-PM10', description: 'Particle Matter PM 10', unit: 'ug/m3', measurementId: 13, defaultKey: 'pm10', datasheet: null, unitDefinition: null, equation: null, reverseEquation: null },
  { id: 117, parentId: 114, name: 'PMS5003-PM1', description: 'Particle Matter PM 1', unit: 'ug/m3', measurementId: 27, defaultKey: 'pm1', datasheet: null, unitDefinition: null, equation: null, reverseEquation: null },
  // 122: name reconstructed from firmware/platform naming pattern (not verified); defaultKey guessed (lower-cased firmware short title)
  { id: 122, parentId: 44, name: 'AS EZO Total Dissolved Solids', description: 'Atlas Scientific EZO™ Total Dissolved Solids', unit: 'ppm', measurementId: 131, defaultKey: 'as_tds', datasheet: null, unitDefinition: null, equation: null, reverseEquation: null },
  // 123: name reconstructed from firmware/platform naming pattern (not verified); defaultKey guessed (lower-cased firmware short title)
  { id: 123, parentId: 44, name: 'AS EZO Salinity', description: 'Atlas Scientific EZO™ Salinity', unit: 'PSU(ppt)', measurementId: 132, defaultKey: 'as_sal', datasheet: null, unitDefinition: null, equation: null, reverseEquation: null },
  { id: 124, parentId: null, name: 'GPS', description: 'Location data frm a GPS device', unit: null, measurementId: null, defaultKey: null, datasheet: null, unitDefinition: null, equation: null, reverseEquation: null },
  // 125: name reconstructed from firmware/platform naming pattern (not verified) (firmware titles); defaultKey guessed (lower-cased firmware short title)
  { id: 125, parentId: 124, name: 'GPS Latitude', description: 'GPS Latitude', unit: 'Deg', measurementId: 125, defaultKey: 'gps_lat', datasheet: null, unitDefinition: null, equation: null, reverseEquation: null },
  { id: 126, parentId: 124, name: 'GPS Longitude', description: 'GPS Longitude', unit: 'Deg', measurementId: 126, defaultKey: 'gps_long', datasheet: null, unitDefinition: null, equation: null, reverseEquation: null },
  { id: 127, parentId: 124, name: 'GPS Altitude', description: 'GPS Altitude', unit: 'm', measurementId: 124, defaultKey: 'gps_alt', datasheet: null, unitDefinition: null, equation: null, reverseEquation: null },
  { id: 128, parentId: 124, name: 'GPS Fix Quality', description: 'GPS Fix Quality', unit: null, measurementId: 128, defaultKey: 'gps_fix', datasheet: null, unitDefinition: null, equation: null, reverseEquation: null },
  { id: 129, parentId: 124, name: 'GPS Speed', description: 'GPS Speed', unit: 'm/s', measurementId: 127, defaultKey: 'gps_speed', datasheet: null, unitDefinition: null, equation: null, reverseEquation: null },
  { id: 130, parentId: 124, name: 'GPS Traked Satellites', description: 'GPS Traked Satellites', unit: null, measurementId: 130, defaultKey: 'gps_satnum', datasheet: null, unitDefinition: null, equation: null, reverseEquation: null },
  { id: 131, parentId: 124, name: 'GPS Horizontal Dilution of Position', description: 'GPS Horizontal Dilution of Position', unit: null, measurementId: 129, defaultKey: 'gps_hdop', datasheet: null, unitDefinition: null, equation: null, reverseEquation: null },
  { id: 132, parentId: null, name: 'ADC_48', description: '16-bit Analog to Digital Converter - ADS1X15 addr. 48', unit: 'V', measurementId: null, defaultKey: null, datasheet: null, unitDefinition: null, equation: null, reverseEquation: null },
  { id: 133, parentId: 132, name: 'ADC_48_0', description: '16-bit Analog to Digital Converter - ADS1X15 addr. 48 ch. 0', unit: 'V', measurementId: 11, defaultKey: 'adc_48_0', datasheet: null, unitDefinition: null, equation: null, reverseEquation: null },
  { id: 134, parentId: 132, name: 'ADC_48_1', description: '16-bit Analog to Digital Converter - ADS1X15 addr. 48 ch. 1', unit: 'V', measurementId: 11, defaultKey: 'adc_48_1', datasheet: null, unitDefinition: null, equation: null, reverseEquation: null },
  { id: 135, parentId: 132, name: 'ADC_48_2', description: '16-bit Analog to Digital Converter - ADS1X15 addr. 48 ch. 2', unit: 'V', measurementId: 11, defaultKey: 'adc_48_2', datasheet: null, unitDefinition: null, equation: null, reverseEquation: null },
  { id: 136, parentId: 132, name: 'ADC_48_3', description: '16-bit Analog to Digital Converter - ADS1X15 addr. 48 ch. 3', unit: 'V', measurementId: 11, defaultKey: 'adc_48_3', datasheet: null, unitDefinition: null, equation: null, reverseEquation: null },
  { id: 137, parentId: null, name: 'ADC_49', description: '16-bit Analog to Digital Converter - ADS1X15 addr. 49', unit: 'V', measurementId: null, defaultKey: null, datasheet: null, unitDefinition: null, equation: null, reverseEquation: null },
  { id: 138, parentId: 137, name: 'ADC_49_0', description: '16-bit Analog to Digital Converter - ADS1X15 addr. 49 ch. 0', unit: 'V', measurementId: 11, defaultKey: 'adc_49_0', datasheet: null, unitDefinition: null, equation: null, reverseEquation: null },
  { id: 139, parentId: 137, name: 'ADC_49_1', description: '16-bit Analog to Digital Converter - ADS1X15 addr. 49 ch. 1', unit: 'V', measurementId: 11, defaultKey: 'adc_49_1', datasheet: null, unitDefinition: null, equation: null, reverseEquation: null },
  { id: 140, parentId: 137, name: 'ADC_49_2', description: '16-bit Analog to Digital Converter - ADS1X15 addr. 49 ch. 2', unit: 'V', measurementId: 11, defaultKey: 'adc_49_2', datasheet: null, unitDefinition: null, equation: null, reverseEquation: null },
  { id: 141, parentId: 137, name: 'ADC_49_3', description: '16-bit Analog to Digital Converter - ADS1X15 addr. 49 ch. 3', unit: 'V', measurementId: 11, defaultKey: 'adc_49_3', datasheet: null, unitDefinition: null, equation: null, reverseEquation: null },
  { id: 142, parentId: null, name: 'ADC_4A', description: '16-bit Analog to Digital Converter - ADS1X15 addr. 4A', unit: 'V', measurementId: null, defaultKey: null, datasheet: null, unitDefinition: null, equation: null, reverseEquation: null },
  { id: 143, parentId: 142, name: 'ADC_4A_0', description: '16-bit Analog to Digital Converter - ADS1X15 addr. 4A ch. 0', unit: 'V', measurementId: 11, defaultKey: 'adc_4a_0', datasheet: null, unitDefinition: null, equation: null, reverseEquation: null },
  { id: 144, parentId: 142, name: 'ADC_4A_1', description: '16-bit Analog to Digital Converter - ADS1X15 addr. 4A ch. 1', unit: 'V', measurementId: 11, defaultKey: 'adc_4a_1', datasheet: null, unitDefinition: null, equation: null, reverseEquation: null },
  { id: 145, parentId: 142, name: 'ADC_4A_2', description: '16-bit Analog to Digital Converter - ADS1X15 addr. 4A ch. 2', unit: 'V', measurementId: 11, defaultKey: 'adc_4a_2', datasheet: null, unitDefinition: null, equation: null, reverseEquation: null },
  { id: 146, parentId: 142, name: 'ADC_4A_3', description: '16-bit Analog to Digital Converter - ADS1X15 addr. 4A ch. 3', unit: 'V', measurementId: 11, defaultKey: 'adc_4a_3', datasheet: null, unitDefinition: null, equation: null, reverseEquation: null },
  { id: 147, parentId: null, name: 'ADC_4B', description: '16-bit Analog to Digital Converter - ADS1X15 addr. 4B', unit: 'V', measurementId: null, defaultKey: null, datasheet: null, unitDefinition: null, equation: null, reverseEquation: null },
  { id: 148, parentId: 147, name: 'ADC_4B_0', description: '16-bit Analog to Digital Converter - ADS1X15 addr. 4B ch. 0', unit: 'V', measurementId: 11, defaultKey: 'adc_4b_0', datasheet: null, unitDefinition: null, equation: null, reverseEquation: null },
  { id: 149, parentId: 147, name: 'ADC_4B_1', description: '16-bit Analog to Digital Converter - ADS1X15 addr. 4B ch. 1', unit: 'V', measurementId: 11, defaultKey: 'adc_4b_1', datasheet: null, unitDefinition: null, equation: null, reverseEquation: null },
  { id: 150, parentId: 147, name: 'ADC_4B_2', description: '16-bit Analog to Digital Converter - ADS1X15 addr. 4B ch. 2', unit: 'V', measurementId: 11, defaultKey: 'adc_4b_2', datasheet: null, unitDefinition: null, equation: null, reverseEquation: null },
  { id: 151, parentId: 147, name: 'ADC_4B_3', description: '16-bit Analog to Digital Converter - ADS1X15 addr. 4B ch. 3', unit: 'V', measurementId: 11, defaultKey: 'adc_4b_3', datasheet: null, unitDefinition: null, equation: null, reverseEquation: null },
  // 158: name from smartcitizen-data tests; parent assumed (CSV gives 162 only 2 children); defaultKey guessed (lower-cased firmware short title)
  { id: 158, parentId: 162, name: 'Sensirion SCD30 - CO2', description: 'CO2', unit: 'ppm', measurementId: 106, defaultKey: 'scd30_co2', datasheet: null, unitDefinition: null, equation: null, reverseEquation: null },
  // 160: name reconstructed from firmware/platform naming pattern (not verified); defaultKey guessed (lower-cased firmware short title)
  { id: 160, parentId: 162, name: 'Sensirion SCD30 - Temperature', description: 'Temperature', unit: 'ºC', measurementId: 1, defaultKey: 'scd30_temp', datasheet: null, unitDefinition: null, equation: null, reverseEquation: null },
  // 161: name reconstructed from firmware/platform naming pattern (not verified); defaultKey guessed (lower-cased firmware short title)
  { id: 161, parentId: 162, name: 'Sensirion SCD30 - Humidity', description: 'Humidity', unit: '%', measurementId: 2, defaultKey: 'scd30_hum', datasheet: null, unitDefinition: null, equation: null, reverseEquation: null },
  { id: 162, parentId: null, name: 'SCD30', description: 'Digital NDIR CO2, temperature and humidity sensor', unit: null, measurementId: null, defaultKey: null, datasheet: null, unitDefinition: null, equation: null, reverseEquation: null },
  { id: 163, parentId: null, name: 'AS EZO ORP', description: 'Atlas Scientific EZO™ ORP Probe', unit: null, measurementId: null, defaultKey: null, datasheet: null, unitDefinition: null, equation: null, reverseEquation: null },
  // 164: name reconstructed from firmware/platform naming pattern (not verified); defaultKey guessed (lower-cased firmware short title)
  { id: 164, parentId: 163, name: 'AS EZO ORP - Redox Potential', description: 'Atlas Scientific EZO™ Redox Potential', unit: 'mV', measurementId: 133, defaultKey: 'as_orp', datasheet: null, unitDefinition: null, equation: null, reverseEquation: null },
  // 165: name reconstructed from firmware/platform naming pattern (not verified); parent assumed 86 (CSV lists 6 children for 86, so this may be wrong); defaultKey guessed (lower-cased firmware short title)
  { id: 165, parentId: 86, name: 'Plantower PMS5003 - PN0.3', description: 'Particle Number PN 0.3', unit: '#/0.1l', measurementId: 108, defaultKey: 'pms_pn_03', datasheet: null, unitDefinition: null, equation: null, reverseEquation: null },
  { id: 166, parentId: 86, name: 'Plantower PMS5003 - PN0.5', description: 'Particle Number PN 0.5', unit: '#/0.1l', measurementId: 109, defaultKey: 'pms_pn_05', datasheet: null, unitDefinition: null, equation: null, reverseEquation: null },
  { id: 167, parentId: 86, name: 'Plantower PMS5003 - PN1.0', description: 'Particle Number PN 1.0', unit: '#/0.1l', measurementId: 110, defaultKey: 'pms_pn_1', datasheet: null, unitDefinition: null, equation: null, reverseEquation: null },
  { id: 168, parentId: 86, name: 'Plantower PMS5003 - PN2.5', description: 'Particle Number PN 2.5', unit: '#/0.1l', measurementId: 111, defaultKey: 'pms_pn_25', datasheet: null, unitDefinition: null, equation: null, reverseEquation: null },
  { id: 169, parentId: 86, name: 'Plantower PMS5003 - PN5.0', description: 'Particle Number PN 5.0', unit: '#/0.1l', measurementId: 113, defaultKey: 'pms_pn_5', datasheet: null, unitDefinition: null, equation: null, reverseEquation: null },
  { id: 170, parentId: 86, name: 'Plantower PMS5003 - PN10.0', description: 'Particle Number PN 10.0', unit: '#/0.1l', measurementId: 114, defaultKey: 'pms_pn_10', datasheet: null, unitDefinition: null, equation: null, reverseEquation: null },
  { id: 181, parentId: null, name: 'Sensirion SPS30', description: 'Light Scattering Particle Matter Sensor', unit: null, measurementId: null, defaultKey: null, datasheet: null, unitDefinition: null, equation: null, reverseEquation: null },
  // 182: name reconstructed from firmware/platform naming pattern (not verified) (same pattern as the SEN5X names seen in clients); descriptions reconstructed; defaultKey guessed (lower-cased firmware short title)
  { id: 182, parentId: 181, name: 'Sensirion SPS30 - PM1.0', description: 'Particle Matter PM 1', unit: 'ug/m3', measurementId: 27, defaultKey: 'sps30_pm_1', datasheet: null, unitDefinition: null, equation: null, reverseEquation: null },
  { id: 183, parentId: 181, name: 'Sensirion SPS30 - PM2.5', description: 'Particle Matter PM 2.5', unit: 'ug/m3', measurementId: 14, defaultKey: 'sps30_pm_25', datasheet: null, unitDefinition: null, equation: null, reverseEquation: null },
  { id: 184, parentId: 181, name: 'Sensirion SPS30 - PM4.0', description: 'Particle Matter PM 4', unit: 'ug/m3', measurementId: 107, defaultKey: 'sps30_pm_4', datasheet: null, unitDefinition: null, equation: null, reverseEquation: null },
  { id: 185, parentId: 181, name: 'Sensirion SPS30 - PM10', description: 'Particle Matter PM 10', unit: 'ug/m3', measurementId: 13, defaultKey: 'sps30_pm_10', datasheet: null, unitDefinition: null, equation: null, reverseEquation: null },
  { id: 186, parentId: 181, name: 'Sensirion SPS30 - PN0.5', description: 'Particle Number PN 0.5', unit: '#/0.1l', measurementId: 109, defaultKey: 'sps30_pn_05', datasheet: null, unitDefinition: null, equation: null, reverseEquation: null },
  { id: 187, parentId: 181, name: 'Sensirion SPS30 - PN1.0', description: 'Particle Number PN 1.0', unit: '#/0.1l', measurementId: 110, defaultKey: 'sps30_pn_1', datasheet: null, unitDefinition: null, equation: null, reverseEquation: null },
  { id: 188, parentId: 181, name: 'Sensirion SPS30 - PN2.5', description: 'Particle Number PN 2.5', unit: '#/0.1l', measurementId: 111, defaultKey: 'sps30_pn_25', datasheet: null, unitDefinition: null, equation: null, reverseEquation: null },
  { id: 189, parentId: 181, name: 'Sensirion SPS30 - PN4.0', description: 'Particle Number PN 4.0', unit: '#/0.1l', measurementId: 112, defaultKey: 'sps30_pn_4', datasheet: null, unitDefinition: null, equation: null, reverseEquation: null },
  { id: 190, parentId: 181, name: 'Sensirion SPS30 - PN10.0', description: 'Particle Number PN 10.0', unit: '#/0.1l', measurementId: 114, defaultKey: 'sps30_pn_10', datasheet: null, unitDefinition: null, equation: null, reverseEquation: null },
  { id: 191, parentId: 181, name: 'Sensirion SPS30 - TPS', description: 'Typical Particle Size', unit: 'um', measurementId: 115, defaultKey: 'sps30_tpsize', datasheet: null, unitDefinition: null, equation: null, reverseEquation: null },
  { id: 192, parentId: null, name: 'Sensirion SEN5X', description: 'Light Scattering Particle Matter Sensor with additional NOx and VOCs indexes', unit: null, measurementId: null, defaultKey: null, datasheet: null, unitDefinition: null, equation: null, reverseEquation: null },
  // 193: names PM1/PM2.5/PM4.0/PM10/PN0.5/TPS seen in API clients, the rest reconstructed; descriptions reconstructed; raw VOC/NOx left without measurement; defaultKey guessed (lower-cased firmware short title)
  { id: 193, parentId: 192, name: 'Sensirion SEN5X - PM1', description: 'Particle Matter PM 1', unit: 'ug/m3', measurementId: 27, defaultKey: 'sen5x_pm_1', datasheet: null, unitDefinition: null, equation: null, reverseEquation: null },
  { id: 194, parentId: 192, name: 'Sensirion SEN5X - PM2.5', description: 'Particle Matter PM 2.5', unit: 'ug/m3', measurementId: 14, defaultKey: 'sen5x_pm_25', datasheet: null, unitDefinition: null, equation: null, reverseEquation: null },
  { id: 195, parentId: 192, name: 'Sensirion SEN5X - PM4.0', description: 'Particle Matter PM 4', unit: 'ug/m3', measurementId: 107, defaultKey: 'sen5x_pm_4', datasheet: null, unitDefinition: null, equation: null, reverseEquation: null },
  { id: 196, parentId: 192, name: 'Sensirion SEN5X - PM10', description: 'Particle Matter PM 10', unit: 'ug/m3', measurementId: 13, defaultKey: 'sen5x_pm_10', datasheet: null, unitDefinition: null, equation: null, reverseEquation: null },
  { id: 197, parentId: 192, name: 'Sensirion SEN5X - PN0.5', description: 'Particle Number PN 0.5', unit: '#/0.1l', measurementId: 109, defaultKey: 'sen5x_pn_05', datasheet: null, unitDefinition: null, equation: null, reverseEquation: null },
  { id: 198, parentId: 192, name: 'Sensirion SEN5X - PN1.0', description: 'Particle Number PN 1.0', unit: '#/0.1l', measurementId: 110, defaultKey: 'sen5x_pn_1', datasheet: null, unitDefinition: null, equation: null, reverseEquation: null },
  { id: 199, parentId: 192, name: 'Sensirion SEN5X - PN2.5', description: 'Particle Number PN 2.5', unit: '#/0.1l', measurementId: 111, defaultKey: 'sen5x_pn_25', datasheet: null, unitDefinition: null, equation: null, reverseEquation: null },
  { id: 200, parentId: 192, name: 'Sensirion SEN5X - PN4.0', description: 'Particle Number PN 4.0', unit: '#/0.1l', measurementId: 112, defaultKey: 'sen5x_pn_4', datasheet: null, unitDefinition: null, equation: null, reverseEquation: null },
  { id: 201, parentId: 192, name: 'Sensirion SEN5X - PN10.0', description: 'Particle Number PN 10.0', unit: '#/0.1l', measurementId: 114, defaultKey: 'sen5x_pn_10', datasheet: null, unitDefinition: null, equation: null, reverseEquation: null },
  { id: 202, parentId: 192, name: 'Sensirion SEN5X - TPS', description: 'Typical Particle Size', unit: 'um', measurementId: 115, defaultKey: 'sen5x_tpsize', datasheet: null, unitDefinition: null, equation: null, reverseEquation: null },
  { id: 203, parentId: 192, name: 'Sensirion SEN5X - Humidity', description: 'Humidity', unit: '%', measurementId: 2, defaultKey: 'sen5x_hum', datasheet: null, unitDefinition: null, equation: null, reverseEquation: null },
  { id: 204, parentId: 192, name: 'Sensirion SEN5X - Temperature', description: 'Temperature', unit: 'ºC', measurementId: 1, defaultKey: 'sen5x_temp', datasheet: null, unitDefinition: null, equation: null, reverseEquation: null },
  { id: 205, parentId: 192, name: 'Sensirion SEN5X - VOCs Index', description: 'VOCs Index', unit: null, measurementId: 117, defaultKey: 'sen5x_vocs_idx', datasheet: null, unitDefinition: null, equation: null, reverseEquation: null },
  { id: 206, parentId: 192, name: 'Sensirion SEN5X - NOx Index', description: 'NOx Index', unit: null, measurementId: 118, defaultKey: 'sen5x_nox_idx', datasheet: null, unitDefinition: null, equation: null, reverseEquation: null },
  { id: 207, parentId: 192, name: 'Sensirion SEN5X - VOCs Raw', description: 'VOCs Raw', unit: null, measurementId: null, defaultKey: 'sen5x_vocs_raw', datasheet: null, unitDefinition: null, equation: null, reverseEquation: null },
  { id: 208, parentId: 192, name: 'Sensirion SEN5X - NOx Raw', description: 'NOx Raw', unit: null, measurementId: null, defaultKey: 'sen5x_nox_raw', datasheet: null, unitDefinition: null, equation: null, reverseEquation: null },
  { id: 209, parentId: null, name: 'Sensirion SFA30', description: 'Formaldehyde electrochemical sensor', unit: null, measurementId: null, defaultKey: null, datasheet: null, unitDefinition: null, equation: null, reverseEquation: null },
  // 210: name reconstructed from firmware/platform naming pattern (not verified); defaultKey guessed (lower-cased firmware short title)
  { id: 210, parentId: 209, name: 'Sensirion SFA30 - Humidity', description: 'Humidity', unit: '%', measurementId: 2, defaultKey: 'sfa30_hum', datasheet: null, unitDefinition: null, equation: null, reverseEquation: null },
  { id: 211, parentId: 209, name: 'Sensirion SFA30 - Temperature', description: 'Temperature', unit: 'ºC', measurementId: 1, defaultKey: 'sfa30_temp', datasheet: null, unitDefinition: null, equation: null, reverseEquation: null },
  { id: 212, parentId: 209, name: 'Sensirion SFA30 - Formaldehyde', description: 'Formaldehyde', unit: 'ppb', measurementId: 116, defaultKey: 'sfa30_hcho', datasheet: null, unitDefinition: null, equation: null, reverseEquation: null },
  { id: 213, parentId: null, name: 'AMS AS7731', description: '3 channel spectral UV-A/B/C sensor', unit: null, measurementId: null, defaultKey: null, datasheet: null, unitDefinition: null, equation: null, reverseEquation: null },
  { id: 214, parentId: 213, name: 'AMS AS7731 - UVA', description: 'AMS AS7731 UVA Channel', unit: 'uW/cm2', measurementId: 119, defaultKey: 'uv_a', datasheet: null, unitDefinition: null, equation: null, reverseEquation: null },
  { id: 215, parentId: 213, name: 'AMS AS7731 - UVB', description: 'AMS AS7731 UVB Channel', unit: 'uW/cm2', measurementId: 120, defaultKey: 'uv_b', datasheet: null, unitDefinition: null, equation: null, reverseEquation: null },
  { id: 216, parentId: 213, name: 'AMS AS7731 - UVC', description: 'AMS AS7731 UVC Channel', unit: 'uW/cm2', measurementId: 121, defaultKey: 'uv_c', datasheet: null, unitDefinition: null, equation: null, reverseEquation: null },
  { id: 217, parentId: 52, name: 'TDK ICS43432 - Noise C', description: 'C-Scale RMS from I2S Digital Mems Microphone with custom Audio Processing Algorithm', unit: 'dBC', measurementId: 4, defaultKey: 'noise_c', datasheet: null, unitDefinition: null, equation: null, reverseEquation: null },
  { id: 218, parentId: 52, name: 'TDK ICS43432 - Noise Z', description: 'Z-Scale RMS from I2S Digital Mems Microphone with custom Audio Processing Algorithm', unit: 'dBZ', measurementId: 4, defaultKey: 'noise_z', datasheet: null, unitDefinition: null, equation: null, reverseEquation: null },
  { id: 219, parentId: 57, name: 'NXP MPL3115A2 - Altitude', description: 'Altitude from digital barometric pressure sensor', unit: 'm', measurementId: 124, defaultKey: 'mpl_alt', datasheet: null, unitDefinition: null, equation: null, reverseEquation: null },
  // 220: name reconstructed from firmware/platform naming pattern (not verified) (firmware title); defaultKey guessed (lower-cased firmware short title)
  { id: 220, parentId: null, name: 'WiFi RSSI', description: 'WiFi received signal strength', unit: 'dBm', measurementId: 122, defaultKey: 'rssi', datasheet: null, unitDefinition: null, equation: null, reverseEquation: null },
  // 221: name reconstructed from firmware/platform naming pattern (not verified) (firmware title); unit 'Present' in firmware; defaultKey guessed (lower-cased firmware short title)
  { id: 221, parentId: null, name: 'SD card', description: 'SD card presence', unit: null, measurementId: 123, defaultKey: 'sdcard', datasheet: null, unitDefinition: null, equation: null, reverseEquation: null },
  { id: 222, parentId: null, name: 'Battery Voltage', description: 'Battery voltage', unit: 'V', measurementId: 11, defaultKey: 'batt_volt', datasheet: null, unitDefinition: null, equation: null, reverseEquation: null },
  { id: 223, parentId: null, name: 'Sensirion SHT35', description: 'Digital relative humidity and air temperature sensor', unit: null, measurementId: null, defaultKey: null, datasheet: null, unitDefinition: null, equation: null, reverseEquation: null },
  { id: 224, parentId: 223, name: 'Sensirion SHT35 - Temperature', description: 'Temperature from digital relative humidity and air temperature sensor', unit: 'ºC', measurementId: 1, defaultKey: 'sht35_t', datasheet: null, unitDefinition: null, equation: null, reverseEquation: null },
  { id: 225, parentId: 223, name: 'Sensirion SHT35 - Humidity', description: 'Humidity from digital relative humidity and air temperature sensor', unit: '%', measurementId: 2, defaultKey: 'sht35_h', datasheet: null, unitDefinition: null, equation: null, reverseEquation: null },
  { id: 226, parentId: null, name: 'ST LPS33', description: 'Digital Barometric Pressure Sensor', unit: null, measurementId: null, defaultKey: null, datasheet: null, unitDefinition: null, equation: null, reverseEquation: null },
  { id: 227, parentId: 226, name: 'ST LPS33 - Barometric Pressure', description: 'Digital Barometric Pressure Sensor', unit: 'kPa', measurementId: 25, defaultKey: 'lps_p', datasheet: null, unitDefinition: null, equation: null, reverseEquation: null },
]

export const kits: SeedKit[] = [
  // 2: sensor_map verified
  { id: 2, slug: 'sck:1,0', name: 'SmartCitizen Kit 1.0', description: 'SCK 1.0 - Ambient Board', sensors: [{ sensorId: 4, key: 'temp' }, { sensorId: 5, key: 'hum' }, { sensorId: 6, key: 'light' }, { sensorId: 7, key: 'noise' }, { sensorId: 8, key: 'no2' }, { sensorId: 9, key: 'co' }, { sensorId: 10, key: 'bat' }, { sensorId: 11, key: 'panel' }, { sensorId: 21, key: 'nets' }] },
  // 3: sensor_map verified
  { id: 3, slug: 'sck:1,1', name: 'SmartCitizen Kit 1.1', description: 'SCK 1.1 - Ambient Board', sensors: [{ sensorId: 12, key: 'temp' }, { sensorId: 13, key: 'hum' }, { sensorId: 14, key: 'light' }, { sensorId: 7, key: 'noise' }, { sensorId: 15, key: 'no2' }, { sensorId: 16, key: 'co' }, { sensorId: 17, key: 'bat' }, { sensorId: 18, key: 'panel' }, { sensorId: 21, key: 'nets' }] },
  // 4: sensors unknown (kit existed until the 2023 kits refactor; its sensor_map was not found)
  { id: 4, slug: 'ms:0,5', name: 'NO2 Diffusion Tubes', description: 'Nitrogen Oxides Diffusion Tubes Spreadsheet', sensors: [] },
  // 5: sensors unknown (kit existed until the 2023 kits refactor; its sensor_map was not found)
  { id: 5, slug: 'ms:0,6', name: 'Noise Sensor TA120', description: 'Noise Sensor CESVA TA120', sensors: [] },
  // 6: sensors unknown (kit existed until the 2023 kits refactor; its sensor_map was not found)
  { id: 6, slug: 'ms:0,3', name: 'Processing Open CV', description: 'Open CV based sensor running built on Processing.org and running on a Raspberry Pi', sensors: [] },
  // 7: sensors unknown (kit existed until the 2023 kits refactor; its sensor_map was not found)
  { id: 7, slug: 'ms:0,4', name: 'Smart Citizen Kit 1.5 Expanded', description: 'SCK 1.5 + Grove Analog Sensor', sensors: [] },
  // 8: sensors unknown (kit existed until the 2023 kits refactor; its sensor_map was not found)
  { id: 8, slug: 'ms:1,0', name: 'Making Sense WAAG #1', description: 'AQM sensor by WAAG', sensors: [] },
  // 9: sensors unknown (kit existed until the 2023 kits refactor; its sensor_map was not found)
  { id: 9, slug: 'ms:1,1', name: 'Making Sense WAAG #2', description: 'AQM sensor by WAAG 2', sensors: [] },
  // 10: sensors unknown (kit existed until the 2023 kits refactor; its sensor_map was not found)
  { id: 10, slug: 'ms:1,3', name: 'Making Sense WAAG #3', description: 'AQM sensor by WAAG 3', sensors: [] },
  // 11: sensors unknown (kit existed until the 2023 kits refactor; its sensor_map was not found)
  { id: 11, slug: 'sck:1,5', name: 'SCK 1.5 MS', description: 'SCK 1.5 - MS Pilot', sensors: [] },
  // 12: sensors unknown (kit existed until the 2023 kits refactor; its sensor_map was not found)
  { id: 12, slug: 'ms:2,0', name: 'Bora Kit', description: 'Bora Air Quality Sensors Kit', sensors: [] },
  // 13: sensors unknown (kit existed until the 2023 kits refactor; its sensor_map was not found)
  { id: 13, slug: 'ms:3,0', name: 'GammaSense Kit', description: 'GammaSense web app that uses device camera via WebRTC', sensors: [] },
  // 14: sensors unknown (kit existed until the 2023 kits refactor; its sensor_map was not found)
  { id: 14, slug: 'sck:1,5,1', name: 'SCK 1.5', description: 'SCK 1.5 - Urban Board', sensors: [] },
  // 15: sensors unknown (kit existed until the 2023 kits refactor; its sensor_map was not found)
  { id: 15, slug: 'sck:1,5:aq', name: 'SCK Aquapioneers 1.5', description: 'SCK 1.5 - Urban Board + Aquapioneers Board', sensors: [] },
  // 16: sensors unknown (kit existed until the 2023 kits refactor; its sensor_map was not found)
  { id: 16, slug: 'sck:1,5:grow:as', name: 'SCK Grow Soil Probes', description: 'SCK 1.5 + Atlas Scientific Sensor Probes', sensors: [] },
  // 17: sensors unknown (kit existed until the 2023 kits refactor; its sensor_map was not found)
  { id: 17, slug: 'sck:1,5:grow:moisture', name: 'SCK Grow Soil Moisture', description: 'SCK 1.5 + Urban Board + Chirp Moisture Sensor', sensors: [] },
  // 18: sensors unknown (kit existed until the 2023 kits refactor; its sensor_map was not found)
  { id: 18, slug: 'sck:2,0,1:dev', name: 'SCK 2.0 - Dev', description: 'SCK 2.0 - Urban Board - Dev', sensors: [] },
  // 19: sensors unknown (kit existed until the 2023 kits refactor; its sensor_map was not found)
  { id: 19, slug: 'sck:2,0:dev:iscape:station', name: 'iSCAPE Station - Dev', description: 'iSCAPE Stations Development Kit', sensors: [] },
  // 20: sensors unknown (kit existed until the 2023 kits refactor; its sensor_map was not found)
  { id: 20, slug: 'sck:2,0,1', name: 'iSCAPE Citizen Kit', description: 'iSCAPE Citizen Kit', sensors: [] },
  // 21: sensors unknown (kit existed until the 2023 kits refactor; its sensor_map was not found)
  { id: 21, slug: 'sck:2,0:iscape:station', name: 'iSCAPE Station', description: 'iSCAPE Living Labs Station', sensors: [] },
  // 22: sensors unknown (kit existed until the 2023 kits refactor; its sensor_map was not found)
  { id: 22, slug: 'sck:1,5:biopv', name: 'BioPV Kit', description: 'SCK 2.0 - Urban Board + Atlas Scientific Sensors + Chirp Moisture + ADC', sensors: [] },
  // 23: sensors unknown (kit existed until the 2023 kits refactor; its sensor_map was not found)
  { id: 23, slug: 'sck:1,5:aq:lite', name: 'SCK Aquapioneers Lite 1.5', description: 'SCK 1.5 - Aquapioneers Lite Board', sensors: [] },
  // 24: sensors unknown (kit existed until the 2023 kits refactor; its sensor_map was not found)
  { id: 24, slug: 'sck:2,0:winemakers', name: 'SCK Wine Makers', description: 'SCK 2.0 + Waterproof Temperature Sensor', sensors: [] },
  // 25: sensors unknown (kit existed until the 2023 kits refactor; its sensor_map was not found)
  { id: 25, slug: 'sck:2,0,1:decode', name: 'SCK 2.1 for DECODE', description: 'DECODE Citizen Kit', sensors: [] },
  // 26: sensors verified from real device responses; keys = sensors' default_key as returned by the API
  { id: 26, slug: 'sck:2,1', name: 'SCK 2.1', description: 'Smart Citizen Kit 2.1 with Urban Sensor Board', sensors: [{ sensorId: 10, key: 'bat' }, { sensorId: 14, key: 'light' }, { sensorId: 53, key: 'noise_dba' }, { sensorId: 55, key: 't' }, { sensorId: 56, key: 'h' }, { sensorId: 58, key: 'bar' }, { sensorId: 87, key: 'pm_avg_2.5' }, { sensorId: 88, key: 'pm_avg_10' }, { sensorId: 89, key: 'pm_avg_1' }, { sensorId: 112, key: 'eco2' }, { sensorId: 113, key: 'tvoc' }] },
  // 27: sensors unknown (kit existed until the 2023 kits refactor; its sensor_map was not found)
  { id: 27, slug: 'sck:2,1:grow:moisture', name: 'SCK Grow Soil Moisture 2.1', description: 'Smart Citizen Kit 2.1 with Urban Sensor Board and Chirp Soil Moisture', sensors: [] },
  // 28: sensors unknown (kit existed until the 2023 kits refactor; its sensor_map was not found)
  { id: 28, slug: 'sck:2,1:iscape:station', name: 'iSCAPE Station 2.1', description: 'iSCAPE Living Labs Station 2.1', sensors: [] },
  // 29: sensors unknown (kit existed until the 2023 kits refactor; its sensor_map was not found)
  { id: 29, slug: 'sck:2,1:form', name: 'SCK 2.1 Formaldehyde', description: 'Smart Citizen Kit 2.1 with Urban Sensor Board with Formaldehyde', sensors: [] },
  // 30: sensors unknown (kit existed until the 2023 kits refactor; its sensor_map was not found)
  { id: 30, slug: 'sck:2,1:pmboard:experiments', name: 'SCK 2.1 PM Board Addons', description: 'Smart Citizen Kit 2.1 with PM Board for Experimental I/O', sensors: [] },
  // 31: sensors unknown (kit existed until the 2023 kits refactor; its sensor_map was not found)
  { id: 31, slug: 'sck:2,1:seawater', name: 'SCK 2.1 Sea Water', description: 'Smart Citizen Kit 2.1 with Sea Water Sensors', sensors: [] },
  // 32: RECONSTRUCTED: SCK 2.1 sensors + GPS children
  { id: 32, slug: 'sck:2,1:gps', name: 'SCK 2.1 GPS', description: 'Smart Citizen Kit 2.1 with GPS', sensors: [{ sensorId: 10, key: 'bat' }, { sensorId: 14, key: 'light' }, { sensorId: 53, key: 'noise_dba' }, { sensorId: 55, key: 't' }, { sensorId: 56, key: 'h' }, { sensorId: 58, key: 'bar' }, { sensorId: 87, key: 'pm_avg_2.5' }, { sensorId: 88, key: 'pm_avg_10' }, { sensorId: 89, key: 'pm_avg_1' }, { sensorId: 112, key: 'eco2' }, { sensorId: 113, key: 'tvoc' }, { sensorId: 125, key: 'gps_lat' }, { sensorId: 126, key: 'gps_long' }, { sensorId: 127, key: 'gps_alt' }, { sensorId: 128, key: 'gps_fix' }, { sensorId: 129, key: 'gps_speed' }, { sensorId: 130, key: 'gps_satnum' }, { sensorId: 131, key: 'gps_hdop' }] },
  // 33: sensors unknown (kit existed until the 2023 kits refactor; its sensor_map was not found)
  { id: 33, slug: 'sck:2,1:station:rev3', name: 'Smart Citizen Station 2.1 rev3', description: 'Smart Citizen Station 2.1 rev3', sensors: [] },
  // 34: sensors unknown (kit existed until the 2023 kits refactor; its sensor_map was not found)
  { id: 34, slug: 'sck:2,1:biopv', name: 'BioPV Kit 2.1', description: 'SCK 2.1 - Urban Board + PM + Atlas + Soil Moisture + ADC ADS1115', sensors: [] },
  // 35: RECONSTRUCTED: SCK 2.1 sensors + SCD30 children
  { id: 35, slug: 'sck:2,1:co2', name: 'SCK 2.1 CO2', description: 'SCK 2.1 - Urban Board + PM + CO2', sensors: [{ sensorId: 10, key: 'bat' }, { sensorId: 14, key: 'light' }, { sensorId: 53, key: 'noise_dba' }, { sensorId: 55, key: 't' }, { sensorId: 56, key: 'h' }, { sensorId: 58, key: 'bar' }, { sensorId: 87, key: 'pm_avg_2.5' }, { sensorId: 88, key: 'pm_avg_10' }, { sensorId: 89, key: 'pm_avg_1' }, { sensorId: 112, key: 'eco2' }, { sensorId: 113, key: 'tvoc' }, { sensorId: 158, key: 'scd30_co2' }, { sensorId: 160, key: 'scd30_temp' }, { sensorId: 161, key: 'scd30_hum' }] },
  // 36: sensors unknown (kit existed until the 2023 kits refactor; its sensor_map was not found)
  { id: 36, slug: 'sck:2,1:co2:co:no2', name: 'SCK 2.1 CO2, CO and NO2', description: 'SCK 2.1 - Urban Board + PM + CO2 + CO + NO2', sensors: [] },
  // 37: sensors unknown (kit existed until the 2023 kits refactor; its sensor_map was not found)
  { id: 37, slug: 'sck:2,1:no2:o3', name: 'SCK 2.1 NO2, O3', description: 'SCK 2.1 - Urban Board + PM + NO2 + O3', sensors: [] },
  // 38: sensors unknown (kit existed until the 2023 kits refactor; its sensor_map was not found)
  { id: 38, slug: 'sck:2,1:soil:air', name: 'SCK 2.1 Soil and Air', description: 'SCK 2.1 - Soil Moisture, Soil Temperature and Air', sensors: [] },
  // 39: sensors unknown (kit existed until the 2023 kits refactor; its sensor_map was not found)
  { id: 39, slug: 'sck:2,1:t:rh', name: 'SCK 2.1 T/RH', description: 'SCK 2.1 - Urban Board + PM + T + RH', sensors: [] },
  // 40: sensors unknown (kit existed until the 2023 kits refactor; its sensor_map was not found)
  { id: 40, slug: 'dyi:pm:co2:gps', name: 'DIY Sensor Kit PCTO @ LD22', description: 'DIY Sensor Kit PCTO for air quality, environment and GPS readings', sensors: [] },
  // 41: RECONSTRUCTED: SCK 2.1 base sensors + SPS30 children instead of PMS5003
  { id: 41, slug: 'sck:2,1', name: 'SCK 2.1 SPS30', description: 'Smart Citizen Kit 2.1 with Urban Sensor Board and Sensirion SPS30', sensors: [{ sensorId: 10, key: 'bat' }, { sensorId: 14, key: 'light' }, { sensorId: 53, key: 'noise_dba' }, { sensorId: 55, key: 't' }, { sensorId: 56, key: 'h' }, { sensorId: 58, key: 'bar' }, { sensorId: 112, key: 'eco2' }, { sensorId: 113, key: 'tvoc' }, { sensorId: 182, key: 'sps30_pm_1' }, { sensorId: 183, key: 'sps30_pm_25' }, { sensorId: 184, key: 'sps30_pm_4' }, { sensorId: 185, key: 'sps30_pm_10' }, { sensorId: 186, key: 'sps30_pn_05' }, { sensorId: 187, key: 'sps30_pn_1' }, { sensorId: 188, key: 'sps30_pn_25' }, { sensorId: 189, key: 'sps30_pn_4' }, { sensorId: 190, key: 'sps30_pn_10' }, { sensorId: 191, key: 'sps30_tpsize' }] },
  // 42: RECONSTRUCTED: SCK 2.1 base sensors + SEN5X children instead of PMS5003
  { id: 42, slug: 'sck:2,1', name: 'SCK 2.1 SEN5X', description: 'Smart Citizen Kit 2.1 with Urban Sensor Board and Sensirion SEN5X', sensors: [{ sensorId: 10, key: 'bat' }, { sensorId: 14, key: 'light' }, { sensorId: 53, key: 'noise_dba' }, { sensorId: 55, key: 't' }, { sensorId: 56, key: 'h' }, { sensorId: 58, key: 'bar' }, { sensorId: 112, key: 'eco2' }, { sensorId: 113, key: 'tvoc' }, { sensorId: 193, key: 'sen5x_pm_1' }, { sensorId: 194, key: 'sen5x_pm_25' }, { sensorId: 195, key: 'sen5x_pm_4' }, { sensorId: 196, key: 'sen5x_pm_10' }, { sensorId: 197, key: 'sen5x_pn_05' }, { sensorId: 198, key: 'sen5x_pn_1' }, { sensorId: 199, key: 'sen5x_pn_25' }, { sensorId: 200, key: 'sen5x_pn_4' }, { sensorId: 201, key: 'sen5x_pn_10' }, { sensorId: 202, key: 'sen5x_tpsize' }, { sensorId: 203, key: 'sen5x_hum' }, { sensorId: 204, key: 'sen5x_temp' }, { sensorId: 205, key: 'sen5x_vocs_idx' }, { sensorId: 206, key: 'sen5x_nox_idx' }, { sensorId: 207, key: 'sen5x_vocs_raw' }, { sensorId: 208, key: 'sen5x_nox_raw' }] },
  // 43: RECONSTRUCTED: SCK 2.1 sensors + SFA30 children
  { id: 43, slug: 'sck:2,1', name: 'SCK 2.1 SFA30', description: 'Smart Citizen Kit 2.1 with Urban Sensor Board and Sensirion SFA30', sensors: [{ sensorId: 10, key: 'bat' }, { sensorId: 14, key: 'light' }, { sensorId: 53, key: 'noise_dba' }, { sensorId: 55, key: 't' }, { sensorId: 56, key: 'h' }, { sensorId: 58, key: 'bar' }, { sensorId: 87, key: 'pm_avg_2.5' }, { sensorId: 88, key: 'pm_avg_10' }, { sensorId: 89, key: 'pm_avg_1' }, { sensorId: 112, key: 'eco2' }, { sensorId: 113, key: 'tvoc' }, { sensorId: 210, key: 'sfa30_hum' }, { sensorId: 211, key: 'sfa30_temp' }, { sensorId: 212, key: 'sfa30_hcho' }] },
  // 44: RECONSTRUCTED: SCK 2.1 sensors + SCD30 + SFA30 children
  { id: 44, slug: 'sck:2,1', name: 'SCK 2.1 SFA30 and SCD30', description: 'Smart Citizen Kit 2.1 with Urban Sensor Board, Sensirion SCD30 and Sensirion SFA30', sensors: [{ sensorId: 10, key: 'bat' }, { sensorId: 14, key: 'light' }, { sensorId: 53, key: 'noise_dba' }, { sensorId: 55, key: 't' }, { sensorId: 56, key: 'h' }, { sensorId: 58, key: 'bar' }, { sensorId: 87, key: 'pm_avg_2.5' }, { sensorId: 88, key: 'pm_avg_10' }, { sensorId: 89, key: 'pm_avg_1' }, { sensorId: 112, key: 'eco2' }, { sensorId: 113, key: 'tvoc' }, { sensorId: 158, key: 'scd30_co2' }, { sensorId: 160, key: 'scd30_temp' }, { sensorId: 161, key: 'scd30_hum' }, { sensorId: 210, key: 'sfa30_hum' }, { sensorId: 211, key: 'sfa30_temp' }, { sensorId: 212, key: 'sfa30_hcho' }] },
  // 45: sensors unknown (kit existed until the 2023 kits refactor; its sensor_map was not found)
  { id: 45, slug: 'sck:2,1', name: 'SCK 2.1 Debug', description: 'Smart Citizen Kit 2.1 internal development', sensors: [] },
]

/** the kit a device gets when POST /devices names none (the current SCK) */
export const defaultKitId: number = 26
