"""Spanish wordings, shaped like ``phrases_en``: the same keys and placeholders, written the way
people in Spain and Latin America write to an assistant, not translated sentence by sentence.

Spanish marks gender where English does not, and the templates serve users and people of both
genders, so the user's own words avoid gendered adjectives about themselves ("tengo alergia",
not "soy alérgica"), the assistant does not address the user with one, and what is said about
``{name}`` keeps to words that fit anyone. ``{rel}`` comes in the person's gender from
``catalogue.SPANISH_RELATIONS`` ("hermana", "compañero de piso") without its possessive, and a
doctor's ``{name}`` carries its article ("la doctora Ruiz"), so it never opens a sentence and
never follows "a" or "de". Values come from ``catalogue.SPANISH_FORMS``, whose comments say
which article or preposition each slot's forms expect; ``{when}`` never opens a sentence either.
"""

from __future__ import annotations

FACTS = {
    "city": {
        "state": [
            (
                "Tengo el sábado libre y me apetece salir de excursión, pero sin coche. Vivo en "
                "{v}: ¿qué planes de un día me recomiendas a los que se llegue bien en tren o en "
                "autobús?",
                "Suelen funcionar tres tipos de plan: un pueblo con encanto a menos de una hora "
                "en regional, un parque natural con autobús desde la estación hasta el inicio de "
                "la ruta, y una villa con casco histórico para pasear sin prisa. Mira a qué hora "
                "sale el último tren de vuelta y si hay billete de ida y vuelta en el día, que "
                "suele salir más barato.",
            ),
            (
                "El alquiler en {v} ha vuelto a subir este año y ya no sé cómo cuadrar las "
                "cuentas. ¿Me echas una mano con un presupuesto mensual que me deje ahorrar algo?",
                "Claro. Un punto de partida habitual es el 50/30/20: la mitad de lo que cobras "
                "para gastos fijos (alquiler, suministros, comida, transporte), un 30 % para "
                "caprichos y un 20 % para ahorro o deudas. Apunta primero los gastos fijos y "
                "luego dale un destino a cada euro que sobre.",
            ),
            (
                "Aquí en {v}, donde me instalé hace unos años, llevamos cuatro días de lluvia sin "
                "parar y me subo por las paredes. ¿Qué hago este finde que no sea ver series en el "
                "sofá?",
                "Con lluvia tienes el rocódromo o la piscina cubierta, un museo en el que nunca "
                "hayas entrado, un taller de un día (cerámica, cocina, cata de café), una tarde "
                "de juegos de mesa con amigos o una sesión larga de cocina tranquila con música.",
            ),
        ],
        "ask": [
            "¿En qué ciudad resido en la actualidad?",
            "¿Dónde tiene {user} su hogar actualmente?",
            "¿Cuál es mi lugar de residencia en este momento?",
        ],
        "change": [
            (
                "¡Por fin nos mudamos a {v} el mes pasado! Tengo el piso lleno de cajas. ¿Por "
                "dónde empiezo a desembalar para hacer vida normal cuanto antes?",
                "¡Enhorabuena por la mudanza! Por este orden: monta la cama (dormir bien es lo "
                "primero), saca lo del baño, deja un rincón de la cocina listo para cocinar y, si "
                "teletrabajas, el escritorio. Libros y decoración, para el fin de semana: es la "
                "parte divertida.",
            ),
            (
                "Te cuento: en primavera me fui de {old} y ahora estoy en {v}. Quiero mandar un "
                "mensaje a los amigos con la dirección nueva, ¿me lo redactas?",
                "Prueba con esto: «¡Hola a todos! Estreno etapa y también dirección, os la dejo "
                "aquí abajo. El sofá cama está libre para quien quiera venir a verme. Y ya que "
                "estamos, pasadme vuestras direcciones actualizadas».",
            ),
            (
                "Ya me he instalado en {v} y me toca buscar dentista y centro de salud nuevos. "
                "¿En qué me fijo para elegir?",
                "Fíjate en la distancia, en si aceptan pacientes nuevos, en el horario (mejor si "
                "tienen primera hora o tarde), en si se puede pedir cita por internet y en lo que "
                "dicen las reseñas recientes sobre las esperas. Para darte de alta lleva el DNI, "
                "un justificante de domicilio y la lista de medicamentos que tomas.",
            ),
        ],
        "other": [
            (
                "Mi {rel} {name} vive en {v} y dentro de poco voy a pasar unos días en su piso. "
                "¿Qué detalle le llevo para agradecer que me acoja?",
                "Funcionan bien algo típico de donde vives (un dulce, un embutido, un vino), una "
                "planta fácil de cuidar con una nota escrita a mano, o invitar a una cena durante "
                "la visita. Cocinar tú una noche suele ser lo que más se agradece.",
            ),
            (
                "{name}, mi {rel}, se acaba de comprar un piso en {v}. ¿Me escribes una tarjeta "
                "cortita para felicitarle por la casa nueva?",
                "«¡Enhorabuena por el piso! Que se llene de buenas comidas, de buenos amigos y de "
                "pocas cajas sin abrir. Resérvame un hueco en el sofá, que yo llevo el postre».",
            ),
        ],
        "ask_other": [
            "¿En qué ciudad reside mi {rel} {name}?",
            "¿Dónde tiene su hogar {name}?",
        ],
    },
    "job": {
        "state": [
            (
                "Llevo seis años trabajando en {v} y creo que ya toca pedir una subida de sueldo. "
                "¿Cómo preparo la conversación?",
                "Prepara pruebas: lo que has conseguido, las responsabilidades que has ido "
                "asumiendo y lo que se paga por puestos parecidos en tu zona. Pide una reunión "
                "solo para eso, empieza por lo que aportas y no por lo que necesitas, y di una "
                "cifra concreta. Si te dicen que ahora no, cierra una fecha para volver a "
                "hablarlo.",
            ),
            (
                "Semana horrible, pero es lo que tiene currar en {v}. ¿Me propones una rutina de "
                "veinte minutos para desconectar el viernes por la noche?",
                "Prueba esto: cinco minutos para apuntar lo que tienes que hacer el lunes y "
                "sacarlo de la cabeza, diez minutos de paseo tranquilo o estiramientos, y cinco "
                "más con algo caliente en la mano y sin pantallas. Si lo repites cada viernes, el "
                "cuerpo aprende que ahí se acaba la semana.",
            ),
            (
                "¿Me ayudas con el titular de LinkedIn? Mi campo es {v} y quiero algo que suene "
                "con seguridad pero sin fanfarronear.",
                "Una estructura que funciona: «puesto + especialidad + lo que consigues», por "
                "ejemplo «[Puesto] | [Especialidad] | Ayudo a [quién] a [qué]». Menos de 120 "
                "caracteres, nada de «gurú» ni «ninja», y las palabras que buscaría alguien de "
                "selección.",
            ),
        ],
        "ask": [
            "¿A qué me dedico profesionalmente?",
            "¿Cuál es la profesión de {user}?",
            "¿De qué me gano la vida?",
        ],
        "change": [
            (
                "¡Noticia bomba! Dejé mi antiguo puesto y hace dos semanas empecé a trabajar en "
                "{v}. ¿Algún consejo para los tres primeros meses?",
                "¡Enhorabuena! El primer mes, escucha y entiende cómo se toman las decisiones; el "
                "segundo, entrega algo pequeño pero visible; el tercero, propón una mejora basada "
                "en lo que has visto. Y queda pronto con la gente de la que depende tu trabajo.",
            ),
            (
                "Al final di el salto: he cambiado {old} por {v}. ¿Me ayudas a reescribir el "
                "resumen del principio del currículum?",
                "Claro. Abre con el puesto nuevo, sigue con dos o tres capacidades que traes de tu "
                "etapa anterior y cierra con un logro concreto, con cifra si puede ser. Tres "
                "líneas como mucho; el resto de la trayectoria va más abajo.",
            ),
            (
                "Ya llevo un mes en {v} después del cambio de rumbo, y a mi edad da bastante "
                "vértigo. ¿Cómo sigo formándome sin quemarme?",
                "Una habilidad al mes, dos ratos cortos de estudio fijos en el calendario y una "
                "lista de «hecho» para ver el avance. Protege el sueño y un día entero de "
                "descanso a la semana: se aprende mejor con la cabeza descansada.",
            ),
        ],
        "other": [
            (
                "Mi {rel} {name} trabaja en {v} y en cada cena hay alguien que le pide una "
                "consulta gratis. ¿Cómo puede decir que no sin quedar mal?",
                "Con una sonrisa y una frase tipo «me encantaría ayudarte, pero esto no se "
                "resuelve bien con una caña en la mano; mejor lo vemos con calma otro día». Y "
                "cambiar de tema con naturalidad. Suele bastar.",
            ),
            (
                "{name}, mi {rel}, que lleva años en {v}, tiene un examen importantísimo la "
                "semana que viene. ¿Qué le mando para darle ánimos?",
                "Un kit de examen: picoteo que no sea solo dulce, un buen té o café, unos "
                "subrayadores que funcionen, tapones para los oídos, una tarjeta con ánimos y "
                "algo para después, como unas entradas de cine o una cena pendiente.",
            ),
        ],
        "ask_other": [
            "¿A qué se dedica mi {rel}?",
            "¿Cuál es el oficio de {name}?",
        ],
    },
    "employer": {
        "state": [
            (
                "Trabajo en {v} y el mes que viene tengo la evaluación anual. ¿Me ayudas a "
                "ordenar lo que he conseguido este año?",
                "Una línea por logro: qué hiciste, cómo y qué resultado tuvo, con cifras si las "
                "hay («automaticé el informe mensual: de tres días a uno»). Agrúpalos en tres o "
                "cuatro temas y pon el más potente arriba del todo.",
            ),
            (
                "El comedor de {v} es un desastre y he decidido llevarme la comida de casa. ¿Qué "
                "platos aguantan bien toda la mañana en un táper?",
                "Aguantan muy bien las ensaladas de legumbres o de pasta, los guisos de cuchara "
                "en un termo, la tortilla o la quiche en porciones, el arroz al horno y los "
                "wraps. Las salsas, aparte; y si hace calor, una bolsa isotérmica con hielo.",
            ),
            (
                "En {v} hacemos un mercadillo solidario el viernes y me ha tocado hornear. ¿Qué "
                "receta sale bien en cantidades grandes?",
                "Las de bandeja son las más agradecidas: brownie, barritas de avena, bizcocho de "
                "limón o de plátano, que se hornean en una fuente grande y se cortan en "
                "cuadraditos. Etiqueta lo que lleve alérgenos y ten bolsitas a mano para llevar.",
            ),
        ],
        "ask": [
            "¿Qué compañía me paga la nómina?",
            "¿Quién es el empleador de {user} actualmente?",
            "¿En qué organización estoy en plantilla?",
        ],
        "change": [
            (
                "El viernes fue mi último día en la empresa de antes y el lunes me incorporo a "
                "{v}. ¿Cómo causo buena impresión a los compañeros nuevos?",
                "Llega pronto, apúntate los nombres (discretamente, después de cada reunión), "
                "pregunta más de lo que opinas las primeras semanas y di que sí a los cafés y "
                "comidas. Entrega algo pequeño pronto para que vean que se puede contar contigo.",
            ),
            (
                "¡Acepté la oferta de {v} y ya he avisado en {old} de que me voy! ¿Me ayudas con "
                "un correo de despedida para el equipo?",
                "Borrador: «Hola a todos: como algunos ya sabéis, a final de mes cierro esta "
                "etapa. Gracias por el apoyo, las risas y todo lo que he aprendido con vosotros. "
                "Os dejo abajo mi correo personal para seguir en contacto. ¡Mucha suerte!».",
            ),
            (
                "Me voy haciendo a {v}: tarjeta nueva, portátil nuevo, todo nuevo. ¿Algún truco "
                "para aprenderme los nombres de cuarenta personas?",
                "Usa cada nombre en voz alta nada más oírlo, asócialo a algún rasgo de la "
                "persona y márcalo en el organigrama después de cada reunión. Dos minutos al día "
                "repasando la lista durante una semana y los tendrás.",
            ),
        ],
        "other": [
            (
                "A mi {rel} {name} le acaban de contratar en {v}. ¿Qué detalle le puedo hacer "
                "para celebrarlo?",
                "Una tarjeta escrita a mano y algo útil para el primer día: una libreta bonita, "
                "una taza de viaje o invitar a comer la primera semana. Tiene cariño sin ser "
                "exagerado.",
            ),
            (
                "{name}, mi {rel}, lleva muchos años en {v} y se está planteando irse. ¿Cómo le "
                "ayudo a decidir sin empujar hacia ningún lado?",
                "Con preguntas abiertas en vez de conclusiones: qué echaría de menos y qué no, "
                "cómo sería un día ideal de trabajo. Podéis hacer a medias la lista de pros y "
                "contras, pero la decisión tiene que ser suya.",
            ),
        ],
        "ask_other": [
            "¿Para qué empresa trabaja mi {rel}?",
            "¿Quién tiene en nómina a {name}?",
        ],
    },
    "partner": {
        "state": [
            (
                "Se acerca el aniversario con {v} y no quiero el típico plan de restaurante. ¿Se "
                "te ocurre algo con más detalle?",
                "Podéis repetir vuestra primera cita en casa, hacer una excursión a un sitio "
                "donde no haya estado ninguno de los dos, apuntaros a una clase de cocina para "
                "dos, montar un álbum de fotos del año o hacer un pícnic al atardecer con una "
                "lista de canciones que signifiquen algo para vosotros.",
            ),
            (
                "{v} y yo llevamos tres años y seguimos discutiendo por quién friega. ¿Hay alguna "
                "forma justa de repartir las tareas de casa?",
                "Probad a repartir por responsabilidades en vez de por turnos: cada uno se "
                "encarga del todo de unas cuantas tareas según lo que prefiera, y las que no "
                "quiere nadie se intercambian cada mes. Una lista compartida en la nevera acaba "
                "con el «la última vez lo hice yo».",
            ),
            (
                "Quiero darle una sorpresa a {v} por nuestros dos años: un fin de semana cerca "
                "del mar, que le encanta. ¿Por dónde empiezo a organizarlo?",
                "Primero fecha y presupuesto; luego un destino a menos de tres horas para no "
                "pasarte el finde en la carretera. Reserva una habitación con vistas, una cena "
                "especial y deja el resto libre. La maleta se puede hacer a escondidas o con "
                "ayuda de alguien de confianza.",
            ),
        ],
        "ask": [
            "¿Con quién tengo una relación sentimental?",
            "¿Cómo se llama la pareja de {user}?",
            "¿Quién es mi media naranja?",
        ],
        "change": [
            (
                "Lo dejé con {old} en primavera. Desde hace un par de meses estoy conociendo a "
                "alguien, {v}. ¿Cómo se lo presento a mis amigos sin que sea incómodo?",
                "Que el primer encuentro sea corto y sin presión: unas cañas o una comida con un "
                "grupo pequeño, nada de una gran fiesta. Pon a tus amigos un poco en contexto "
                "antes y ten a mano un par de temas de conversación que funcionen con todos.",
            ),
            (
                "¡El mes que viene me voy a vivir con {v}! Empezamos a salir el verano pasado. "
                "¿Qué deberíamos hablar antes de compartir piso?",
                "Dinero (cómo repartís el alquiler y los gastos comunes, si abrís cuenta "
                "conjunta), tareas de casa, visitas y tiempo a solas, horarios y ruido, y qué "
                "pasa con el contrato si algún día lo dejáis. Hablarlo ahora es mucho más fácil "
                "que discutirlo después.",
            ),
            (
                "{v}, con quien llevo unos meses quedando, quiere conocer a mis padres. ¿Cómo "
                "hago para que la comida salga bien?",
                "Avisa a las dos partes de antemano, ten preparados un par de temas seguros (y "
                "los que conviene evitar), que no dure más de un par de horas y elegid un sitio "
                "en el que tus padres estén a gusto. Un detalle pequeño para ellos siempre suma.",
            ),
        ],
    },
    "diet": {
        "state": [
            (
                "Sigo una {v} desde hace años. ¿Me planificas cinco cenas para esta semana que se "
                "hagan en media hora como mucho?",
                "Te propongo cinco ideas rápidas que puedes adaptar a tus reglas: una bandeja de "
                "verduras al horno, un salteado a fuego fuerte, una crema contundente, un bol "
                "para montar al gusto y una ensalada grande con algo caliente. Si el domingo "
                "dejas hechas un par de salsas, ganas mucho tiempo.",
            ),
            (
                "Me han invitado a una boda y en la confirmación preguntan por restricciones "
                "alimentarias. Hago una {v}, ¿cómo lo pongo para que quede claro?",
                "Breve y concreto: qué no puedes tomar, un par de ejemplos de lo que sí, y un "
                "«con algo sencillo me apaño». En cocina agradecen las instrucciones claras mucho "
                "más que las disculpas.",
            ),
            (
                "Tres años ya con la {v} y me encuentro con mucha energía, pero me preocupa que me "
                "falte algún nutriente. ¿Qué debería vigilar?",
                "Un análisis de sangre al año con hierro, vitamina B12 y vitamina D, y ojo a los "
                "omega-3, la proteína y la fibra. Si le enseñas a un dietista-nutricionista una "
                "semana normal de comidas, verá enseguida si hay huecos.",
            ),
        ],
        "ask": [
            "¿Cómo es mi alimentación?",
            "¿Qué régimen alimenticio tiene {user}?",
            "Antes de cocinar para mí, ¿qué hay que saber sobre lo que como?",
        ],
        "change": [
            (
                "Actualizo: desde el mes pasado me he pasado a una {v}. ¿Me rehaces la lista "
                "básica de la compra?",
                "Hecho: pásame la lista que tienes y te marco qué quitar, qué sustituir y qué "
                "añadir. La idea general es mucha fruta y verdura fresca, un par de fuentes de "
                "proteína que te gusten y una despensa con básicos para platos rápidos.",
            ),
            (
                "La {old} no me sentaba bien, así que ahora sigo una {v}. ¿Ideas de desayunos "
                "fáciles?",
                "Puedes ir rotando: avena remojada la noche anterior o pudin de chía, revuelto "
                "con verduras, yogur con fruta y semillas, o tostadas saladas. Si dejas dos o "
                "tres cosas preparadas, las mañanas de diario se resuelven solas.",
            ),
            (
                "La médica me sugirió probar la {v} y ya llevo seis semanas. ¿Qué picoteo me va "
                "bien entre horas?",
                "Un puñado de semillas, palitos de verdura con hummus, queso o tofu en dados, "
                "fruta con crema de almendra o garbanzos tostados. Mejor en raciones pequeñas "
                "preparadas de antemano que comer directamente de la bolsa.",
            ),
        ],
        "other": [
            (
                "Viene a cenar mi {rel} {name}, que sigue a rajatabla una {v}. ¿Qué plato "
                "principal pongo para que todo el mundo coma a gusto?",
                "Lo más seguro es un formato para montar: una bandeja grande de verduras asadas "
                "con un cereal, y salsas y toppings aparte para que cada cual se sirva. Queda "
                "abundante y nadie se siente «el caso especial».",
            ),
            (
                "Voy a cocinar para {name}, mi {rel}, que hace una {v}. ¿Qué postre puedo "
                "preparar?",
                "Los postres a base de fruta son los más fáciles de acertar: peras al vino, un "
                "crumble de frutos rojos, un sorbete o manzanas asadas con canela. Antes de "
                "ponerte, confirma qué ingredientes concretos no puede tomar.",
            ),
        ],
        "ask_other": [
            "¿Cómo se alimenta mi {rel}?",
            "¿Qué pauta alimentaria respeta {name}?",
        ],
    },
    "phone": {
        "state": [
            (
                "Mi {v} se queda sin batería a media tarde. ¿Qué ajustes son los que más chupan?",
                "Los sospechosos habituales: el brillo alto y la pantalla siempre encendida, la "
                "actualización en segundo plano, la ubicación en «siempre» y la mala cobertura. "
                "En los ajustes de batería verás qué apps gastan más; después de comer puedes "
                "activar el modo de ahorro.",
            ),
            (
                "Todas mis fotos están solo en el {v} y me da pánico perderlas. ¿Cuál es la forma "
                "sensata de hacer copia de seguridad?",
                "La regla 3-2-1: tres copias, en dos soportes distintos y una fuera de casa. En "
                "la práctica, activa la copia automática en la nube y, cada cierto tiempo, vuelca "
                "todo a un disco duro externo.",
            ),
            (
                "¿Me recomiendas alguna app para el control de hábitos que vaya bien en el {v}?",
                "Busca una que tenga widget, recordatorios que se puedan posponer y que te "
                "enseñe las rachas; eso importa más que tener mil funciones. Empieza con dos "
                "hábitos, no con diez: con listas largas casi todo el mundo abandona.",
            ),
        ],
        "ask": [
            "¿Qué móvil uso?",
            "¿Con qué teléfono anda {user} por ahí?",
            "¿Qué modelo de smartphone llevo en el bolsillo?",
        ],
        "change": [
            (
                "Por fin he jubilado el {old}: hoy me llega el {v}. ¿Cómo paso los chats de uno "
                "a otro?",
                "Casi todas las apps de mensajería tienen una opción de transferencia en los "
                "ajustes. Hazlo antes de borrar nada, con los dos aparatos en la misma wifi y "
                "enchufados, y comprueba que han pasado fotos y archivos antes de restablecer el "
                "viejo.",
            ),
            (
                "La semana pasada me cambié al {v} y no paro de equivocarme con los gestos. "
                "¿Cómo me acostumbro rápido?",
                "Dale una semana de uso a propósito: configura gestos y atajos lo más parecido "
                "posible a lo que tenías, coloca las apps que más usas en el mismo sitio de "
                "antes y desactiva de momento las funciones que no vas a usar.",
            ),
            (
                "Estreno {v} y quiero dejarlo bien configurado en cuanto a privacidad. ¿Qué toco "
                "primero?",
                "Empieza por los permisos de las apps (ubicación, micrófono, cámara, contactos), "
                "desactiva los anuncios personalizados, pon un código largo con huella o cara y "
                "revisa qué apps pueden rastrearte entre aplicaciones.",
            ),
        ],
        "other": [
            (
                "Mi {rel} {name} se acaba de comprar un {v} y no para de preguntarme cómo "
                "configurarlo. ¿Cuáles son las cinco primeras cosas que debería hacer?",
                "Una: actualizar el sistema. Dos: activar la copia de seguridad. Tres: poner "
                "código y desbloqueo biométrico. Cuatro: activar la función de localizar el "
                "dispositivo. Cinco: limpiar las notificaciones y dejar solo las importantes.",
            ),
            (
                "{name}, mi {rel}, dice que la cámara del {v} es la mejor para fotos de noche. "
                "¿Es verdad o es marketing?",
                "De noche pesan más el tamaño del sensor y el procesado que la marca, y entre los "
                "modelos de gama alta de los últimos años la diferencia es pequeña. Lo más justo "
                "es comparar las muestras nocturnas de análisis independientes.",
            ),
        ],
        "ask_other": [
            "¿Qué móvil tiene mi {rel}?",
            "¿Con qué teléfono va {name}?",
        ],
    },
    "team": {
        "state": [
            (
                "Soy del {v} de toda la vida y el sábado hay derbi; vienen seis amigos a verlo a "
                "casa. ¿Qué preparo de picar?",
                "Lo ideal es lo que se deja listo antes del pitido inicial y no pide atención: "
                "una olla de chili con nachos, una bandeja de alitas al horno, unas croquetas, "
                "frutos secos y bebida bien fría.",
            ),
            (
                "Mis amigos se ríen de mí por seguir al {v}, y uno de ellos cumple años la semana "
                "que viene. ¿Me escribes una felicitación con guasa?",
                "«¡Feliz cumpleaños a la única persona capaz de criticar mis gustos futbolísticos "
                "mientras se come mis patatas en mi sofá! Un año más viejo y con el mismo mal ojo "
                "para el fútbol. ¡Disfruta del día!».",
            ),
            (
                "El {v} ha vuelto a perder y llevo toda la mañana mirando resultados. Dame algo "
                "productivo que hacer este domingo.",
                "Deja el móvil en otra habitación y elige algo corto que dé satisfacción: ordenar "
                "un armario, cocinar para toda la semana, una hora de paseo con un pódcast o "
                "llamar a alguien con quien hace tiempo que no hablas.",
            ),
        ],
        "ask": [
            "¿De qué club soy hincha?",
            "¿A qué equipo anima {user}?",
            "¿Por qué colores sufro cada jornada de liga?",
        ],
        "change": [
            (
                "No te rías, pero ahora voy con el {v}: fui al campo con unos compañeros y me "
                "ganó la grada. ¿Cómo aprendo los cánticos?",
                "Los foros de aficionados y los vídeos grabados desde la grada son lo más rápido; "
                "los cánticos principales de casi cualquier equipo son un puñado. Los primeros "
                "partidos, ponte cerca de los veteranos y sígueles: a nadie le molesta un novato.",
            ),
            (
                "Veinte años aguantando al {old} y se acabó: me he sacado el abono del {v}. ¿Qué "
                "llevo el primer día al estadio?",
                "La entrada en el móvil y una captura por si acaso, una tarjeta para pagar, ropa "
                "por capas y algo para la lluvia. Mira antes la normativa de bolsos: muchos "
                "estadios solo dejan entrar con bolsas pequeñas.",
            ),
            (
                "Ahora sigo al {v}, que juega muchísimo mejor. ¿Algún pódcast de táctica para "
                "principiantes?",
                "Busca programas que expliquen con lenguaje llano y pizarra: muchos tienen "
                "episodios dedicados a la presión alta, a los sistemas y a la estrategia. Con "
                "esas ideas en la cabeza, ver un partido entero repetido enseña muchísimo.",
            ),
        ],
        "other": [
            (
                "Mi {rel} {name} es del {v} a muerte. ¿Qué se le puede regalar a alguien que vive "
                "tanto el fútbol?",
                "Un póster enmarcado de un partido histórico, una camiseta retro, una visita "
                "guiada al estadio, un buen libro de fútbol o entradas para un partido fuera de "
                "casa al que nunca haya ido.",
            ),
            (
                "{name}, mi {rel}, tiene abono del {v} y me ha invitado al partido. ¿Qué tengo que "
                "saber para mi primera vez en un estadio?",
                "Llega con tiempo para empaparte del ambiente, apréndete el nombre de dos o tres "
                "jugadores, no vayas con los colores del rival y, para levantarte y cantar, haz "
                "lo que haga quien te ha invitado.",
            ),
        ],
        "ask_other": [
            "¿De qué equipo es hincha mi {rel}?",
            "¿A qué club anima {name}?",
        ],
    },
    "car": {
        "state": [
            (
                "Tengo que cambiar las ruedas del {v} antes del invierno. ¿Merece la pena pagar "
                "más por neumáticos de cuatro estaciones?",
                "Mira la medida que llevas ahora y compara en la etiqueta la adherencia en mojado "
                "y el ruido. Si donde estás hiela de vez en cuando pero nieva poco, los de cuatro "
                "estaciones compensan; si no, unos buenos de verano salen más baratos.",
            ),
            (
                "El mes que viene me voy de viaje largo con mi {v}. ¿Me haces una lista de lo que "
                "no puede faltar?",
                "Lista: documentación y seguro, soporte y cargador para el móvil, mapas "
                "descargados, agua y algo de comer, botiquín, triángulos o baliza, chaleco, "
                "linterna, una manta y bolsas de basura. Antes de salir, presión de ruedas y "
                "nivel de aceite.",
            ),
            (
                "Esta mañana se ha encendido el testigo del motor en el {v}. ¿Puedo seguir "
                "usándolo hasta el lunes, cuando abra el taller?",
                "Si la luz está fija, suele significar «revísalo pronto»; si parpadea, «para en "
                "cuanto puedas». Fija y con el coche funcionando normal, trayectos cortos con "
                "cuidado suelen ser aceptables, pero que lean el código de error cuanto antes.",
            ),
        ],
        "ask": [
            "¿Qué coche es el mío?",
            "¿Cuál es el vehículo de {user}?",
            "¿Qué automóvil aparco a la puerta de mi casa?",
        ],
        "change": [
            (
                "Por fin vendí el {old} y me he comprado un {v}. ¿Qué mantenimiento le toca el "
                "primer año?",
                "El primer año: cambio de aceite y filtro cuando diga el manual, rotación de "
                "ruedas y revisión de frenos, y comprobar si hay alguna llamada a revisión del "
                "fabricante. Apunta ya las fechas en el calendario para no olvidarte.",
            ),
            (
                "Me estoy haciendo al {v}; el anterior ya acabó en el desguace. ¿Cómo coloco bien "
                "el asiento y los retrovisores?",
                "Primero el asiento: con el pedal pisado a fondo la rodilla debe quedar un poco "
                "doblada, y las muñecas deben llegar a lo alto del volante sin despegar la "
                "espalda. Luego los espejos: que apenas se vea el lateral del coche, y así "
                "reduces el ángulo muerto.",
            ),
            (
                "El mes pasado dimos el viejo a cuenta y ahora tenemos un {v}. ¿Merece la pena "
                "ponerle una cámara de salpicadero?",
                "Normalmente sí: ayuda a aclarar un accidente y alguna aseguradora lo premia. "
                "Elige una con cámara delantera y trasera, con modo aparcamiento si duerme en la "
                "calle, y mejor con la instalación de los cables oculta.",
            ),
        ],
        "other": [
            (
                "Mi {rel} {name} quiere vender su {v}. ¿Cómo se calcula un precio razonable?",
                "Compara con anuncios del mismo modelo, año y kilometraje, ajusta según estado e "
                "historial de mantenimiento, y échale un vistazo a algún tasador online. Pon un "
                "precio un poco por encima del mínimo para dejar margen al regateo.",
            ),
            (
                "{name}, mi {rel}, acaba de estrenar un {v}. ¿Qué debería revisar la primera "
                "semana?",
                "Leer en el manual qué significa cada testigo, comprobar presión de ruedas y "
                "niveles, guardar el teléfono de asistencia en carretera y asegurarse de tener el "
                "libro de mantenimiento y la segunda llave.",
            ),
        ],
        "ask_other": [
            "¿Qué coche conduce mi {rel}?",
            "¿Cuál es el vehículo de {name}?",
        ],
    },
    "sport": {
        "state": [
            (
                "Hago {v} cuatro mañanas por semana. ¿Qué me conviene comer antes de entrenar?",
                "Algo ligero y fácil de digerir entre media hora y una hora antes: un plátano, "
                "una tostada con miel o un cuenco pequeño de avena. La comida fuerte con "
                "proteína, para después, y un vaso de agua nada más levantarte.",
            ),
            (
                "Me he hecho daño en el hombro, seguramente de tantas sesiones de {v}. ¿Cuánto "
                "tengo que parar antes de volver?",
                "Si es una sobrecarga leve, unos días sin los movimientos que duelen y luego una "
                "o dos semanas volviendo poco a poco. Si notas debilidad, hormigueo o dolor por "
                "la noche, que te vea un fisio antes de retomar.",
            ),
            (
                "Quiero darme un capricho. ¿Qué material me compro si practico {v} casi a diario?",
                "Algo para recuperar en serio (una pistola de masaje o un rulo de espuma), una "
                "buena bolsa de deporte, una clase con un entrenador para pulir la técnica o "
                "ropa técnica que te quede bien de verdad. Lo de recuperar es lo que más se usa.",
            ),
        ],
        "ask": [
            "¿Cómo me mantengo en forma?",
            "¿Qué deporte prefiere {user}?",
            "¿A qué actividad física dedico más horas?",
        ],
        "change": [
            (
                "Me he pasado de {old} a {v}, y las rodillas me lo agradecen. ¿Cómo voy subiendo "
                "la carga sin lesionarme?",
                "Empieza con la mitad de lo que crees que aguantas, no subas más de un 10 % por "
                "semana y deja al menos un día de descanso entre las sesiones duras. Si las "
                "agujetas duran más de dos días, toca bajar el ritmo.",
            ),
            (
                "Me han cambiado los horarios del gimnasio y ahora voy tres veces por semana a "
                "{v}. ¿Qué errores de principiante debería evitar?",
                "Los típicos: pasarse las dos primeras semanas, no calentar, copiar lo que hacen "
                "los que llevan años y dormir poco. Una o dos sesiones con un monitor al principio "
                "te ahorran meses de malos hábitos.",
            ),
            (
                "El mes pasado me apunté a un club de {v} y no hay quien me saque de ahí. ¿Cómo "
                "llevo un registro de lo que voy mejorando?",
                "Un diario sencillo: fecha, qué hiciste, cómo de duro fue del 1 al 10 y una nota. "
                "Cada cuatro semanas repite la misma sesión de prueba y compara; dice más que las "
                "sensaciones de cada día.",
            ),
        ],
        "other": [
            (
                "Mi {rel} {name} hace {v} todos los días y quiere apuntarse a su primera "
                "competición. ¿Cómo encuentra una para principiantes?",
                "Las webs de los clubes y federaciones de la zona suelen anunciar pruebas para "
                "debutantes. Mejor una con categorías por nivel o edad y con margen para "
                "prepararse; ir antes a una como público quita muchos nervios.",
            ),
            (
                "{name}, mi {rel}, no se pierde una sesión de {v}. ¿Qué le regalo por menos de "
                "cincuenta euros?",
                "Por ese precio: una buena botella térmica, una camiseta técnica, un libro de "
                "algún entrenador o deportista conocido, un bono para una clase de prueba o un "
                "kit de bolas de masaje para recuperar.",
            ),
        ],
        "ask_other": [
            "¿Qué deporte practica mi {rel}?",
            "¿Cómo se mantiene en forma {name}?",
        ],
    },
    "instrument": {
        "state": [
            (
                "Llevo un año con clases de {v} y solo tengo veinte minutos al día para ensayar. "
                "¿Cómo los aprovecho al máximo?",
                "Repártelos: tres minutos de calentamiento, diez para el pasaje o la técnica que "
                "más te cueste, cinco para algo que te guste y dos para apuntar qué toca mañana. "
                "Despacio y con atención rinde más que mucho rato disperso.",
            ),
            (
                "Los vecinos dicen que por la noche se oyen mis ratos de {v}. ¿Cómo reduzco el "
                "ruido?",
                "Cámbiate a la habitación más alejada de la pared que compartís, añade textiles y "
                "una alfombra gruesa, deja lo más ruidoso para el día y pregúntales qué horas les "
                "molestan menos: agradecerán que preguntes.",
            ),
            (
                "¿Me recomiendas piezas sencillas de {v}? Estoy en nivel principiante y no quiero "
                "nada rápido.",
                "Empieza por canciones populares lentas, baladas sencillas y bandas sonoras "
                "conocidas, mejor con partes que se repiten: aprendes un patrón y lo reutilizas. "
                "Busca partituras marcadas como «fácil» o de primer nivel.",
            ),
        ],
        "ask": [
            "¿Qué instrumento estoy aprendiendo a tocar?",
            "¿Qué instrumento estudia {user}?",
            "¿En qué me estoy formando musicalmente?",
        ],
        "change": [
            (
                "Dejé las clases de {old} y ahora voy a clases de {v}. ¿Es normal que me duelan "
                "tanto los dedos al principio?",
                "Unas semanas de molestias son normales mientras las manos se adaptan; un dolor "
                "agudo, no. Sesiones de quince o veinte minutos, fíjate en la postura y en no "
                "apretar de más, y pide a tu profesor que te mire la técnica.",
            ),
            (
                "Cambio de afición: ahora recibo clases de {v} los jueves. ¿Cómo leo partituras "
                "más rápido?",
                "Un poco cada día mejor que mucho una vez por semana: piezas muy sencillas, a "
                "tempo lento y sin pararte por los errores. Aprender a reconocer intervalos en "
                "vez de nota a nota acelera muchísimo.",
            ),
            (
                "El mes pasado me hice con material de segunda mano para empezar con {v} y cada "
                "día me engancha más. ¿Qué reviso antes de llevarlo a una puesta a punto?",
                "Grietas, piezas sueltas, ruidos raros y si lo que se mueve se mueve con "
                "suavidad; si puedes, que lo pruebe un profesor. Si la base está bien, la puesta "
                "a punto merece la pena.",
            ),
        ],
        "other": [
            (
                "Mi {rel} {name} toca {v} en una banda de aficionados. ¿Qué se le regala a alguien "
                "que hace música?",
                "Algo que vaya a usar: una buena lámpara de atril, un cuaderno de estudio, "
                "entradas para un concierto, una tarjeta regalo de partituras o algún accesorio "
                "para el estuche. Si puedes enterarte de su lista de deseos, mejor.",
            ),
            (
                "{name}, mi {rel}, da un pequeño recital de {v} la semana que viene. ¿Qué se le "
                "dice a alguien después de actuar?",
                "Algo concreto: menciona un momento que te gustara, tipo «la parte lenta del "
                "medio fue preciosa». No señales fallos si no te lo piden; un «me alegro mucho de "
                "haber venido» nunca falla.",
            ),
        ],
        "ask_other": [
            "¿Qué instrumento es el de mi {rel}?",
            "¿Cuál es el instrumento de {name}?",
        ],
    },
    "language": {
        "state": [
            (
                "Repaso vocabulario de {v} en el metro todos los días. ¿Me das diez frases para "
                "pedir en una cafetería?",
                "Practica esta serie: saludar, «quería…», «pequeño/grande», «para llevar o para "
                "tomar aquí», «con leche», «sin azúcar», «¿cuánto es?», «¿puedo pagar con "
                "tarjeta?», «gracias» y «que tengas un buen día». Dilas en voz alta y te las "
                "traduzco una a una.",
            ),
            (
                "¿Me preguntas los números en {v}? La semana que viene tengo examen en la escuela "
                "de idiomas.",
                "Vale. Te doy cifras y me contestas con palabras. Primera ronda: 17, 42, 99, 365 "
                "y 1000. Mándame las respuestas, te las corrijo y luego pasamos a fechas y "
                "precios.",
            ),
            (
                "Mi profe de {v} dice que flojeo en comprensión oral. ¿Qué pódcasts o métodos me "
                "recomiendas?",
                "Pódcasts para estudiantes con transcripción: una escucha sin texto, otra "
                "leyendo y otra más sin texto. Y la técnica de sombra, repetir justo detrás del "
                "hablante, entrena el oído y la boca a la vez.",
            ),
        ],
        "ask": [
            "¿Qué lengua extranjera intento aprender?",
            "¿Qué idioma está estudiando {user}?",
            "¿Qué quiero llegar a hablar con soltura?",
        ],
        "change": [
            (
                "He aparcado el {old} porque no llego a todo, y por trabajo he empezado con el "
                "{v}. ¿Cómo evito liarme entre los dos?",
                "Sepáralos: cuadernos y apps distintos, y momentos del día distintos para cada "
                "uno. Cuando retomes el que has dejado en pausa, dedica una semana a repasar "
                "antes de meter nada nuevo.",
            ),
            (
                "¡Este cuatrimestre me he apuntado a un curso de {v}! ¿Cuántas horas a la semana "
                "es realista dedicarle?",
                "Trabajando a jornada completa, entre tres y cinco horas es realista: las clases "
                "más tres o cuatro repasos cortos y algo de escucha. La constancia pesa más que "
                "el total.",
            ),
            (
                "Tengo profesora nueva de {v} y es buenísima. ¿Cómo saco el máximo partido a una "
                "clase de una hora?",
                "Mándale antes lo que quieres practicar, dedica casi toda la clase a hablar, "
                "grábala si te deja y convierte ese mismo día sus correcciones en tarjetas de "
                "repaso.",
            ),
        ],
        "other": [
            (
                "Mi {rel} {name} se va a vivir fuera y le está dando duro al {v}. ¿Qué apps "
                "merece la pena pagar?",
                "Las que hacen hablar o dan corrección de una persona de verdad: plataformas de "
                "profesores nativos o apps de intercambio. Para vocabulario, una app gratuita de "
                "tarjetas va sobrada.",
            ),
            (
                "{name}, mi {rel}, acaba de empezar clases de {v} desde cero. ¿Qué libro le "
                "recomiendo?",
                "Lecturas graduadas: historias cortas escritas para el nivel inicial, con "
                "glosario y audio. Como complemento del manual, no en su lugar.",
            ),
        ],
        "ask_other": [
            "¿Qué lengua estudia mi {rel}?",
            "¿Qué idioma intenta dominar {name}?",
        ],
    },
    "coffee": {
        "state": [
            (
                "Todos los días me pido un {v} y a final de mes es una pasta. ¿Cuánto me ahorraría "
                "preparándolo en casa y qué necesito?",
                "Si lo compras cada día laborable, en casa sueles ahorrar entre la mitad y tres "
                "cuartas partes. Necesitas una cafetera o hervidor decente, un espumador si lleva "
                "leche y una materia prima algo mejor de la habitual.",
            ),
            (
                "¿Me escribes un poema corto y gracioso sobre mi {v} de cada mañana para el grupo "
                "del trabajo? Es mi ritual sagrado.",
                "«Taza en mano y sin hablar, / que los correos pueden esperar; / primer sorbo, "
                "suspiro leve, / y el mundo ya por fin se mueve».",
            ),
            (
                "Me tomo un {v} a eso de las tres de la tarde y luego duermo fatal. ¿Tendrá algo "
                "que ver?",
                "Bastante probable: la cafeína puede durar seis horas o más en el cuerpo. Prueba "
                "dos semanas a tomarlo antes de la una o pásate a la versión sin cafeína por la "
                "tarde, y mira si duermes mejor.",
            ),
        ],
        "ask": [
            "¿Qué suelo beber cuando voy a una cafetería?",
            "¿Cuál es la consumición habitual de {user}?",
            "¿Con qué me mantengo en pie durante la jornada?",
        ],
        "change": [
            (
                "He dejado el {old} y ahora me tomo un {v}; el estómago lo nota. ¿Dos al día está "
                "bien?",
                "Para la mayoría de adultos sanos, dos al día no dan problema; la referencia "
                "habitual es no pasar de unos 400 mg de cafeína diarios. Si tienes el estómago "
                "sensible, mejor con comida que en ayunas.",
            ),
            (
                "El camarero nuevo de abajo me ha enganchado al {v}. ¿Me buscas una receta para "
                "hacerlo en casa?",
                "Cuéntame cómo lo notas (dulce, intenso, cremoso) y ajustamos la receta. En "
                "general, la diferencia está en una buena materia prima y en la temperatura de "
                "la leche.",
            ),
            (
                "Últimamente empiezo el día con un {v}. ¿Le pones un nombre gracioso a mi taza?",
                "Algunas opciones: «Combustible diario», «Taza de la ambición», «No molestar», "
                "«Paciencia líquida» o «Simulador de persona madrugadora».",
            ),
        ],
        "other": [
            (
                "Mi {rel} {name} no puede vivir sin su {v}. ¿Hay algún lote de regalo para alguien "
                "así?",
                "Monta uno tú: un surtido de un tostador o una tetería pequeña, una taza bonita y "
                "unas galletas o un buen chocolate para acompañar.",
            ),
            (
                "Voy a bajar a por cafés para la oficina y {name}, mi {rel}, siempre quiere un "
                "{v}. ¿Cómo recojo el pedido de los demás por el chat sin liarla?",
                "«¡Bajo a por cafés a las diez y media! Decidme qué queréis antes de las diez y "
                "cuarto y luego paso el total por aquí». Con hora límite y forma de pago, queda "
                "todo claro.",
            ),
        ],
        "ask_other": [
            "¿Qué bebe mi {rel}?",
            "¿Qué pide {name} en la cafetería?",
        ],
    },
    "allergy": {
        "state": [
            (
                "El domingo hago un brunch en casa. Ojo, que cualquier cosa que lleve {v} me manda "
                "a urgencias; ya me pasó una vez. ¿Me montas un menú?",
                "Te propongo algo sencillo y sin riesgos: patatas asadas con romero, verduras a "
                "la plancha, tostadas con tomate y aceite, yogur con fresas y una ensalada de "
                "cítricos. En lo que compres hecho, lee siempre la etiqueta, y usa cubiertos de "
                "servir separados.",
            ),
            (
                "¿Cómo se lo digo al camarero para que se lo tomen en serio? Con una pizca de {v} "
                "se me cierra la garganta.",
                "Pronto y sin rodeos: «Tengo una alergia grave; una cantidad mínima me puede "
                "mandar al hospital. ¿Podéis confirmar con cocina qué platos son seguros?». "
                "Decir «grave» y «hospital» hace que en cocina se lo tomen en serio.",
            ),
            (
                "Viajo en avión la semana que viene y llevo conmigo la adrenalina por si acaso: "
                "si pruebo algo con {v}, acabo en el hospital. ¿Qué tengo que saber para el "
                "control de seguridad?",
                "Llévala en el equipaje de mano con la etiqueta de la farmacia, un informe "
                "médico y avisa nada más empezar el control. Mejor llevar dos, y consulta antes "
                "la normativa de la aerolínea.",
            ),
        ],
        "ask": [
            "¿Qué alimento me puede provocar una reacción seria?",
            "¿Qué le da alergia a {user}?",
            "¿Qué ingrediente no debe aparecer jamás en un plato que me preparen?",
        ],
    },
    "hometown": {
        "state": [
            (
                "Me crié en {v} y echo de menos los sabores de allí. ¿Me enseñas un guiso casero "
                "de los de toda la vida?",
                "Claro: dora la carne o las setas por tandas, pocha cebolla y zanahoria, añade "
                "un poco de tomate, caldo y especias, y a fuego lento un par de horas. Dime qué "
                "plato recuerdas y ajustamos el aliño.",
            ),
            (
                "Tengo una cena de antiguos alumnos en {v}, donde pasé toda la infancia. ¿Qué "
                "contesto cuando me pregunten qué ha sido de mi vida?",
                "Prepara una respuesta de dos frases, una sobre el trabajo o la vida y otra sobre "
                "algo que estés disfrutando, y devuelve la pregunta. La gente va a reencontrarse, "
                "no a comparar.",
            ),
            (
                "Mi madre sigue en {v}, donde crecí, y quiere que hagamos más videollamadas. ¿Qué "
                "tablet es la más sencilla para alguien de setenta años?",
                "Una de pantalla grande con modo simplificado, que le dejes configurada antes de "
                "dársela, con tu contacto en la pantalla de inicio y, si existe, la opción de "
                "responder automáticamente a las llamadas de la familia.",
            ),
        ],
        "ask": [
            "¿De dónde soy originariamente?",
            "¿Cuál es la tierra natal de {user}?",
            "¿En qué lugar están mis raíces?",
        ],
    },
    "condition": {
        "state": [
            (
                "Tengo {v} y quiero empezar a moverme con un plan muy suave. ¿Me preparas tres "
                "semanas?",
                "Semana 1: tres días de veinte minutos de paseo a buen ritmo y movilidad suave. "
                "Semana 2: veinticinco minutos y algún ejercicio sencillo con el propio peso. "
                "Semana 3: treinta minutos, dos de ellos con pesos ligeros. Para si los síntomas "
                "empeoran, y coméntalo antes con tu médico.",
            ),
            (
                "Desde que me diagnosticaron {v} me cansa dar explicaciones en el trabajo. ¿Cuánto "
                "le tengo que contar a mi jefe?",
                "En general basta con lo que afecta al trabajo y las adaptaciones que necesitas, "
                "sin el historial completo. Una conversación corta y práctica («así puedo rendir "
                "bien») suele ser suficiente, y recursos humanos puede ayudar con la "
                "confidencialidad.",
            ),
            (
                "Viajar con {v} siempre me estresa un montón. ¿Me haces una lista de equipaje?",
                "Lista: medicación para todo el viaje y unos días más, repartida en dos bolsos; "
                "informe médico; recetas; un seguro de viaje que cubra enfermedades previas; y "
                "el número de emergencias del destino guardado en el móvil.",
            ),
        ],
        "ask": [
            "¿Qué problema de salud crónico arrastro?",
            "¿Qué dolencia de larga duración padece {user}?",
            "¿Qué enfermedad me acompaña desde hace tiempo?",
        ],
    },
    "degree": {
        "state": [
            (
                "Estudié {v} y en mi trabajo no tiene nada que ver. ¿Cómo lo pongo en el "
                "currículum para que sume?",
                "Una línea en formación y, en el resumen del perfil, las capacidades que te dio: "
                "investigar, analizar, escribir, manejar datos. A quien selecciona le importa lo "
                "que sabes hacer más que el nombre del título.",
            ),
            (
                "Hice la carrera de {v} y ahora me estoy planteando un máster a distancia. ¿Cómo "
                "lo compagina la gente con un trabajo a jornada completa?",
                "Quien lo saca adelante suele fijar horarios de estudio (dos tardes y una mañana "
                "de fin de semana), pide flexibilidad en el trabajo desde el principio y elige "
                "asignaturas relacionadas con lo que hace, para que una cosa alimente la otra.",
            ),
            (
                "Un antiguo compañero de mi promoción de {v} viene a pasar el día. ¿Adónde lo "
                "llevo?",
                "Mezcla nostalgia y novedad: comida en un sitio de los que os habrían gustado de "
                "estudiantes, un paseo por un parque o un mercado, una exposición que dé para "
                "discutir y una cena tranquila para cerrar.",
            ),
        ],
        "ask": [
            "¿Qué titulación universitaria tengo?",
            "¿Cuál es la formación académica de {user}?",
            "¿Qué estudios superiores cursé?",
        ],
    },
    "birthday": {
        "state": [
            (
                "Mi cumpleaños es el {v} y este año quiero hacer un pícnic pequeñito. ¿Qué comida "
                "aguanta bien el transporte?",
                "Lo resistente: bocadillos o empanadas, ensalada de cereales, palitos de verdura "
                "con salsa para mojar, queso y picos, una tarta entera en su molde y fruta que no "
                "se estropee con los golpes. Una nevera portátil y un cuchillo.",
            ),
            (
                "El {v} cumplo un año más, qué le vamos a hacer. ¿Me organizas una cena tranquila "
                "para ocho?",
                "Sencillo: un plato principal que se haga solo (un guiso o un curry), una "
                "ensalada grande, pan y el postre comprado. Deja la mesa puesta la noche antes y "
                "que los invitados traigan la bebida.",
            ),
            (
                "¿Me pones unos recordatorios? Cumplo años el {v} y todos los años se me olvida "
                "pedir el día libre a tiempo.",
                "Crea un evento que se repita cada año con tres avisos: seis semanas antes para "
                "pedir el día, dos semanas antes para organizar algo y el mismo día por la "
                "mañana. Casi todos los calendarios permiten varios avisos por evento.",
            ),
        ],
        "ask": [
            "¿En qué fecha nací?",
            "¿Qué fecha hay que recordar para felicitar a {user}?",
            "¿Cuándo me toca soplar las velas?",
        ],
    },
    "cuisine": {
        "state": [
            (
                "Para mí no hay nada como la {v}. ¿Cómo sé si las reseñas de un restaurante son "
                "fiables antes de una cita?",
                "Mira solo las recientes, fíjate sobre todo en las de tres estrellas (suelen ser "
                "las más honestas), en las fotos de los clientes y no en las del local, y si "
                "queréis charlar, en si alguien comenta que hay mucho ruido.",
            ),
            (
                "Quiero aprender a preparar {v} en casa. ¿Qué cinco cosas de despensa compro "
                "primero?",
                "Dime qué platos quieres hacer antes y te hago la lista a medida. En general: la "
                "salsa o pasta de especias clave, el arroz o los fideos adecuados, dos o tres "
                "especias secas, un buen aceite y la hierba fresca que más se use.",
            ),
            (
                "En mis cumpleaños siempre elijo {v}. Este año somos diez: ¿cómo reservo sin que "
                "sea un caos?",
                "Reserva con dos o tres semanas, pregunta si tienen menú de grupo (se pide mucho "
                "más rápido), confirma el número dos días antes y dejad claro cómo se paga antes "
                "de llegar.",
            ),
        ],
        "ask": [
            "Si pudiera elegir cualquier cosa, ¿qué cocina escogería?",
            "¿Qué gastronomía le gusta más a {user}?",
            "¿Qué tipo de platos prefiero por encima de todo?",
        ],
    },
    "fear": {
        "state": [
            (
                "Le tengo pánico a {v}. ¿Hay forma de superarlo poco a poco, con ejercicios de "
                "exposición en casa?",
                "La exposición gradual funciona: ordena las situaciones de la que menos a la que "
                "más angustia te da y quédate en cada escalón hasta que la ansiedad baje a la "
                "mitad. Con un psicólogo formado en terapia cognitivo-conductual se avanza más "
                "rápido y con más seguridad.",
            ),
            (
                "Mis amigos quieren hacer el finde que viene un plan que tiene que ver con {v}, y "
                "solo de pensarlo me pongo a temblar. ¿Cómo digo que no sin aguar la fiesta?",
                "Con sinceridad y con otra propuesta: «Eso no lo llevo nada bien; ¿os parece si "
                "me uno luego para cenar?». A tus amigos les importa verte a ti, no la actividad.",
            ),
            (
                "Desde siempre, lo de {v} me supera. Cuando no me queda otra, ¿hay alguna técnica "
                "de respiración que ayude?",
                "Prueba la respiración en caja: inspira en cuatro tiempos, aguanta cuatro, suelta "
                "en cuatro y aguanta otros cuatro, varias veces. Soltar el aire más despacio de "
                "lo que lo coges calma rápido, y nombrar cinco cosas que ves te ancla al momento.",
            ),
        ],
        "ask": [
            "¿Qué es lo que más me asusta?",
            "¿Qué le da fobia a {user}?",
            "¿Qué me aterroriza?",
        ],
    },
    "author": {
        "state": [
            (
                "Me he leído todo lo de {v}. Si me gusta ese estilo, ¿con quién sigo?",
                "Cuéntame qué obra te gustó más y por qué, y afinamos. Un buen truco es mirar qué "
                "influencias cita la propia persona que escribe y las listas de finalistas de "
                "premios de aquellos años.",
            ),
            (
                "Este mes me toca elegir en el club de lectura y dudo entre dos novelas de {v}. "
                "¿Cuál da más juego para debatir?",
                "La que tenga un personaje polémico o un final abierto: el desacuerdo anima la "
                "conversación. Mira también la extensión; si es más corta, la terminará más "
                "gente.",
            ),
            (
                "En vacaciones quiero releer a {v}. ¿Me doy el capricho de una edición en tapa "
                "dura?",
                "Si relees a menudo, sí: una buena edición se disfruta más y dura décadas. En "
                "librerías de viejo y webs de segunda mano se encuentran ediciones preciosas al "
                "precio de una de bolsillo nueva.",
            ),
        ],
        "ask": [
            "¿De quién son los libros que más me gustan?",
            "¿Cuál es la pluma favorita de {user}?",
            "¿De qué novelista soy fan incondicional?",
        ],
    },
    "heritage": {
        "state": [
            (
                "En mi casa siempre se habló {v}, pero lo tengo cada vez más oxidado. ¿Cómo lo "
                "recupera alguien ya adulto?",
                "Métela en tu día a día: el móvil configurado en esa lengua, radio o pódcasts "
                "mientras cocinas, las noticias una vez por semana y, cuando llames a la "
                "familia, no cambiar de idioma aunque cueste.",
            ),
            (
                "Mis abuelos solo hablan {v} y en las comidas familiares me toca hacer de "
                "intérprete. ¿Cómo no perder la paciencia?",
                "Traduce en trozos cortos, no historias enteras; avisa de que estás resumiendo y "
                "haz pausas cuando lo necesites. Decir «dadme un segundo» es perfectamente "
                "normal: interpretar cansa muchísimo.",
            ),
            (
                "Crecí oyendo {v} en casa y a veces hasta sueño en él. ¿Es normal pensar en dos "
                "lenguas a la vez?",
                "Muy normal. Las personas bilingües cambian de lengua al pensar según el tema, "
                "con quién hablan o dónde aprendieron esas palabras.",
            ),
        ],
        "ask": [
            "¿Cuál es mi lengua materna?",
            "¿Qué se hablaba en la familia de {user} durante su infancia?",
            "¿Qué idioma aprendí antes que ningún otro?",
        ],
    },
    "hobby": {
        "state": [
            (
                "El plan perfecto de mis fines de semana es hacer {v}: es lo único que me vacía "
                "la cabeza. ¿Me ayudas a montarme un rincón en casa?",
                "Busca un sitio con buena luz natural, una superficie firme y el material al "
                "alcance de la mano (cajas o un panel perforado), y deja las cosas a la vista "
                "para poder ponerte en cuanto te sientes.",
            ),
            (
                "Un amigo quiere iniciarse en {v}, que es lo mío desde hace años. ¿Cómo se lo "
                "enseño sin agobiarle?",
                "Empieza con un proyecto pequeño que se termine en una sesión, enseña más de lo "
                "que explicas y deja que se equivoque. Lo avanzado, para la segunda o tercera "
                "vez.",
            ),
            (
                "¿Me escribes un texto cortito y cálido para subir a Instagram mi último trabajo "
                "de {v}?",
                "«Manos lentas, cabeza en calma. Esta pieza me ha llevado su tiempo y ha merecido "
                "la pena cada minuto».",
            ),
        ],
        "ask": [
            "¿Qué hago para relajarme en mi tiempo libre?",
            "¿Cuál es el pasatiempo de {user}?",
            "¿Con qué afición lleno los días de descanso?",
        ],
    },
    "film": {
        "state": [
            (
                "Habré visto {v} unas quince veces. ¿Qué me recomiendas que tenga un aire "
                "parecido?",
                "Dime qué es lo que más te engancha (el ambiente, la fotografía, los personajes) "
                "y te busco títulos. Otras obras del mismo director o con el mismo director de "
                "fotografía son un buen punto de partida.",
            ),
            (
                "Organizo noche de cine en casa y, cómo no, toca {v}, que es mi remedio para los "
                "días malos. ¿Qué pongo de picar?",
                "Si puedes, algo que haga un guiño al lugar donde pasa la historia, y además un "
                "clásico dulce y uno salado. Sírvelo todo en cuencos antes de apagar la luz, para "
                "que nadie ande con bolsas en lo mejor.",
            ),
            (
                "¿Me escribes una reseña de {v} como si fuera un pirata? Me la sé de memoria.",
                "«¡Arrr, esta historia es un cofre lleno de tesoros! He reído, he llorado sobre "
                "mi ron y mañana zarpo otra vez hacia ella. ¡Cinco doblones de oro de cinco!».",
            ),
        ],
        "ask": [
            "¿Cuál es mi peli favorita de todos los tiempos?",
            "¿Qué largometraje prefiere {user} por encima de cualquier otro?",
            "¿Qué película podría ver una y otra vez sin aburrirme nunca?",
        ],
    },
    "dream": {
        "state": [
            (
                "Algún día quiero conocer {v}; lleva años en mi lista. Si quiero hacerlo en tres "
                "años, ¿cuánto tengo que ahorrar al mes?",
                "Calcula el total (vuelos, alojamiento, comidas, actividades y un 15 % de "
                "colchón) y divídelo entre 36. Programa una transferencia automática a una "
                "cuenta aparte el día que cobras, así no depende de la fuerza de voluntad.",
            ),
            (
                "Me muero por pisar {v} desde hace años. ¿En qué época del año es mejor ir?",
                "Depende de lo que busques: clima, gente y precios cambian mucho con las "
                "estaciones. En general, los meses justo antes y después de la temporada alta "
                "equilibran bien tiempo y tranquilidad.",
            ),
            (
                "Si algún día me cojo un año sabático, me voy a recorrer {v}. ¿Cómo se negocia "
                "una excedencia en el trabajo?",
                "Mira primero la política de la empresa y llega con un plan: fechas con mucha "
                "antelación, traspaso de tareas y quién cubre qué. Plantearlo como «volveré con "
                "más energía» ayuda.",
            ),
        ],
        "ask": [
            "¿Cuál es el viaje de mis sueños?",
            "¿Qué destino anhela visitar {user}?",
            "¿Qué rincón del mundo sueño con explorar?",
        ],
    },
    "wake": {
        "state": [
            (
                "Me levanto a las {v} todos los días, fines de semana incluidos. ¿Qué desayunos "
                "puedo dejar hechos la noche antes?",
                "Avena remojada, magdalenas de huevo y verdura, pudin de chía o un tarro de yogur "
                "con fruta y granola por capas. Todo aguanta en la nevera y por la mañana está "
                "listo en segundos.",
            ),
            (
                "El despertador me suena a las {v} y a las nueve de la noche ya no puedo con mi "
                "alma. ¿Cómo organizo las tardes?",
                "Cuenta hacia atrás desde la hora a la que necesitas dormirte: cena unas tres "
                "horas antes, deja las pantallas una hora antes y crea una rutina corta para "
                "acostarte. Lo que exija concentración, mejor a primera hora de la tarde.",
            ),
            (
                "Estar en pie a las {v} significa que tengo una hora para mí antes de que se "
                "despierte el resto de la casa. ¿En qué la invierto?",
                "En lo importante que siempre se queda fuera: leer, crear algo, hacer ejercicio, "
                "practicar un idioma o planificar el día. Nada de correo del trabajo en ese rato, "
                "así sigue siendo tuyo.",
            ),
        ],
        "ask": [
            "¿Cuándo salgo de la cama por las mañanas?",
            "¿Cuándo empieza la mañana de {user}?",
            "¿Cómo de temprano madrugo?",
        ],
    },
    "volunteer": {
        "state": [
            (
                "Todos los sábados por la mañana echo una mano {v}. ¿Me escribes un texto "
                "animando a la gente a apuntarse?",
                "«¿Te apetece dedicar unas horas a algo que de verdad importa? Ven un sábado por "
                "la mañana: no hace falta experiencia, te enseñamos todo allí. ¡Escríbeme si te "
                "interesa!».",
            ),
            (
                "Un finde sí y otro no paso unas horas {v}. ¿Lo pongo en el currículum?",
                "Sí, en un apartado propio de voluntariado: qué haces, con qué frecuencia y una "
                "capacidad o logro que demuestre (constancia, trabajo en equipo, organización). "
                "Se valora mucho, sobre todo en puestos de trato con personas.",
            ),
            (
                "Los sábados colaboro {v} y es lo mejor de mi semana. ¿Cómo no sentirme culpable "
                "cuando no puedo ir?",
                "Avisa con tiempo, ayuda a buscar sustituto si puedes y recuerda que quien "
                "descansa aguanta muchos más años que quien se quema. Faltar un día no borra todo "
                "lo que aportas.",
            ),
        ],
        "ask": [
            "¿Qué labor sin cobrar hago por la comunidad?",
            "¿A qué causa solidaria dedica su tiempo {user}?",
            "¿Cómo ayudo a los demás de forma desinteresada en mis ratos libres?",
        ],
    },
    "boardgame": {
        "state": [
            (
                "El viernes hay noche de juegos en casa y caerá una partida al {v}, que es mi "
                "favorito. ¿Qué picoteo pongo que no manche las piezas?",
                "Lo que no deja los dedos pringados: palomitas en vasitos, uvas, palitos "
                "salados, brochetas pequeñas y un chocolate que no se derrita. La bebida, en una "
                "mesita aparte.",
            ),
            (
                "Voy a enseñar a jugar al {v} a unos amigos nuevos. ¿Cómo explico las reglas en "
                "cinco minutos?",
                "Primero cómo se gana, luego qué se puede hacer en un turno y después un turno de "
                "ejemplo. Los casos raros, cuando salgan; la primera partida, con todo a la vista "
                "y preguntas libres.",
            ),
            (
                "Todas las semanas pierdo al {v} contra la misma persona. ¿Me recomiendas libros o "
                "vídeos de estrategia?",
                "Busca análisis de partidas reales comentadas jugada a jugada por gente experta: "
                "entender el porqué de cada decisión enseña más que cualquier lista de trucos. Y "
                "repasa tus derrotas para encontrar el momento en que se torció.",
            ),
        ],
        "ask": [
            "¿Con qué me lo paso mejor alrededor de una mesa?",
            "¿Cuál es el juego de tablero preferido de {user}?",
            "¿A qué pasatiempo con fichas o cartas me engancho más?",
        ],
    },
    "musician": {
        "state": [
            (
                "Desde los quince años no paro de escuchar a {v}. ¿Me preparas una playlist con "
                "cosas del estilo?",
                "Claro, dime tus tres canciones preferidas y tiro por ahí. Mirar colaboraciones, "
                "productores y teloneros de sus giras es una buena forma de encontrar sonidos "
                "parecidos.",
            ),
            (
                "¿Me ayudas con un discurso de boda? Quiero colar una frase de una canción de "
                "{v}, que me salvó la adolescencia.",
                "Estructura: quién eres, una anécdota divertida de la pareja, una frase sincera "
                "sobre por qué encajan, tu guiño musical y el brindis. Que no pase de tres "
                "minutos.",
            ),
            (
                "Por unas entradas de {v} soy capaz de hacer cola toda la noche. ¿Cómo funcionan "
                "los códigos de preventa?",
                "Las preventas suelen ser para miembros del club de fans, para quien se "
                "suscribe a los avisos o para clientes de ciertas tarjetas, y el código llega "
                "uno o dos días antes de la venta general. Regístrate pronto y deja guardados "
                "los datos de pago.",
            ),
        ],
        "ask": [
            "¿Qué artista me gusta más?",
            "¿A quién pone más en los auriculares {user}?",
            "¿Qué música significa más para mí?",
        ],
    },
    "pet": {
        "state": [
            (
                "Tenemos {v} y el mes que viene me voy tres días fuera. ¿Mejor que venga alguien "
                "a casa o busco una residencia?",
                "Para la mayoría de animales, que venga alguien estresa menos porque mantienen "
                "su rutina; una residencia es mejor si necesitan supervisión todo el día. En "
                "cualquier caso, haz antes una prueba corta.",
            ),
            (
                "Vivo con {v} y quiero llenar el piso de plantas. ¿Cuáles no son tóxicas?",
                "Suelen ser seguras la cinta, el helecho de Boston, la calathea, la palmera de "
                "salón y aromáticas como la albahaca. Evita lirios, potos y cicas, y consulta "
                "una lista de toxicidad antes de comprar.",
            ),
            (
                "Con {v} en el piso, las facturas de la clínica se disparan; este mes, un montón "
                "de pruebas. ¿Compensa contratar un seguro?",
                "Si una factura imprevista de cientos de euros te supondría un problema, sí. "
                "Compara pólizas de cobertura vitalicia frente a las anuales y lee bien las "
                "exclusiones por enfermedades previas y la franquicia.",
            ),
        ],
        "ask": [
            "¿Qué animal vive conmigo?",
            "¿Qué mascota cuida {user}?",
            "¿Quién comparte mi hogar sin ser una persona?",
        ],
    },
}

EVENTS = {
    "race": {
        "state": [
            (
                "¡Terminé mi primera {v} {when}! Tengo las piernas destrozadas. ¿Qué como y qué "
                "hago estos días para recuperarme?",
                "¡Enhorabuena! Una buena comida con proteína e hidratos, agua a sorbos durante el "
                "día, un paseo suave para soltar las piernas y a dormir pronto. Deja unos días "
                "antes de volver a correr.",
            ),
            (
                "Acabé la {v} {when}, con peor marca de la que esperaba pero sin parar a caminar "
                "ni una vez. ¿Cuándo puedo volver a entrenar?",
                "¡Eso tiene mucho mérito! Unos días de descanso, luego una semana solo con rodajes "
                "suaves, y a partir de ahí vas subiendo la intensidad.",
            ),
        ],
        "ask": [
            "¿Cuándo participé en aquella prueba de fondo?",
            "¿En qué fecha fue la gran competición de {user}?",
        ],
    },
    "concert": {
        "state": [
            (
                "Vi a {v} en directo {when} y todavía me pitan los oídos. ¿Cuándo debería "
                "preocuparme?",
                "El pitido después de un concierto fuerte suele irse en uno o dos días. Si dura "
                "más, o notas que oyes peor o te duele, ve al médico. Para la próxima, unos "
                "tapones de música protegen sin estropear el sonido.",
            ),
            (
                "¡Lo de {v} {when} fue una pasada! ¿Me ayudas con un pie de foto para las fotos "
                "del concierto?",
                "«Todavía sin bajar de la nube. Ruido, calor y perfección: de esas noches que no "
                "se olvidan».",
            ),
        ],
        "ask": [
            "¿Cuándo fui a ver música en vivo por última vez?",
            "¿Qué día vio {user} actuar a {v}?",
        ],
    },
    "wedding": {
        "state": [
            (
                "Fui a la boda {v} {when} y estuve bailando hasta las dos. ¿Cómo recupero el ritmo "
                "de sueño?",
                "Levántate a tu hora aunque cueste, busca luz natural por la mañana, siestas de "
                "veinte minutos como mucho y acuéstate a tu hora de siempre. En dos o tres días "
                "habrás recuperado el ritmo.",
            ),
            (
                "Di un discurso en la boda {v} {when} y la gente se rio donde tocaba. Ahora me han "
                "pedido presentar un evento: ¿algún consejo?",
                "¡Enhorabuena! Presentar es sobre todo que todo fluya: un guion claro, frases "
                "cortas para enlazar un momento con otro y un par de recursos por si algo se "
                "retrasa.",
            ),
        ],
        "ask": [
            "¿Qué día se casó alguien a cuya celebración asistí?",
            "¿En qué fecha estuvo {user} en un enlace matrimonial?",
        ],
    },
    "interview": {
        "state": [
            (
                "Tuve la entrevista en {v} {when} y dijeron que contestarían en dos semanas. "
                "¿Mando ya un correo de seguimiento o espero?",
                "En las primeras veinticuatro horas, un correo breve de agradecimiento: gracias "
                "por el tiempo, una referencia a algo de la conversación y tu interés. Después, "
                "espera las dos semanas antes de volver a preguntar.",
            ),
            (
                "Los de {v} me tuvieron una hora acribillándome a preguntas {when} y no paro de "
                "darle vueltas a cada respuesta. ¿Cómo lo dejo estar?",
                "Apunta las preguntas y cómo las responderías mejor: así el darle vueltas se "
                "convierte en preparación. Luego haz algo que te absorba; el resultado ya no está "
                "en tus manos.",
            ),
        ],
        "ask": [
            "¿Cuándo fue mi proceso de selección con {v}?",
            "¿Qué día optó {user} a un puesto en {v}?",
        ],
    },
    "dental": {
        "state": [
            (
                "Me sacaron una muela del juicio {when} y tengo la cara como un hámster. ¿Qué "
                "puedo comer?",
                "Los primeros días, cosas blandas y frías: yogur, batidos (sin pajita), puré de "
                "patata, revuelto, sopa templada. Nada crujiente ni picante, y enjuagues suaves "
                "con agua y sal a partir del segundo día.",
            ),
            (
                "El dentista me quitó la muela del juicio {when}. ¿Cuánto suele durar la "
                "hinchazón?",
                "Suele alcanzar el máximo al segundo o tercer día y bajar en una semana más o "
                "menos. Frío las primeras 48 horas y después calor. Si a partir del tercer día "
                "duele cada vez más, llama a la consulta.",
            ),
        ],
        "ask": [
            "¿Cuándo me operaron de la boca?",
            "¿Qué día le extrajeron un diente a {user}?",
        ],
    },
    "trip": {
        "state": [
            (
                "Me escapé a {v} {when} y fue una maravilla. ¿Me ayudas a escribir un mensaje de "
                "agradecimiento para quien nos alojó?",
                "«¡Mil gracias por la acogida! El apartamento estaba impecable, el desayuno fue "
                "lo mejor y todos los sitios que nos recomendaste, un acierto. Volveremos seguro, "
                "y ya se lo estamos contando a todo el mundo».",
            ),
            (
                "Cogí el primer tren a {v} {when}, ida y vuelta en el día. ¿Me recomiendas una "
                "app para llevar un diario de viaje?",
                "Busca una que añada fotos y ubicación sola, funcione sin conexión y exporte a PDF "
                "o a libro impreso. Tres líneas cada noche, con el recuerdo fresco: con los años "
                "es lo que más se valora.",
            ),
        ],
        "ask": [
            "¿Cuándo estuve en {v} la última vez?",
            "¿Qué día hizo {user} la visita a {v}?",
        ],
    },
    "diving": {
        "state": [
            (
                "¡Conseguí el título de buceo en aguas abiertas {when}! ¿Qué hago para no perder "
                "práctica?",
                "Vuelve a meterte en el agua en los próximos meses, apunta cada inmersión en el "
                "cuaderno y, si pasa mucho tiempo, haz una sesión de repaso en piscina antes del "
                "viaje. Con una docena de inmersiones, plantéate el curso avanzado.",
            ),
            (
                "Aprobé la certificación de submarinismo {when}, por fin. ¿Tengo que comprarme el "
                "equipo?",
                "Al principio no: lo grande se alquila. Cómprate unas gafas que te ajusten bien, "
                "aletas y, si vas a bucear a menudo, un ordenador de buceo. Que quede bien "
                "importa más que la marca.",
            ),
        ],
        "ask": [
            "¿Cuándo obtuve el permiso para sumergirme con botella?",
            "¿Qué día se sacó {user} la licencia de inmersión?",
        ],
    },
    "ankle": {
        "state": [
            (
                "Me torcí el tobillo {when} al bajar un bordillo y se me ha hinchado. ¿Hielo o "
                "calor?",
                "Frío los dos primeros días (veinte minutos cada vez, envuelto en un paño), "
                "pierna en alto y reposo. Si no puedes apoyar nada o el dolor es fuerte, que te "
                "hagan una radiografía para descartar fractura.",
            ),
            (
                "Me hice un esguince en el parque {when} y el pie se está poniendo morado. "
                "¿Cuándo debería ir al médico?",
                "Si no puedes dar cuatro pasos, si duele al apretar el hueso o si en unos días no "
                "mejora, ve al médico. El moratón por sí solo es muy habitual en los esguinces.",
            ),
        ],
        "ask": [
            "¿Cuándo me lesioné la pierna?",
            "¿Qué día se hizo daño {user}?",
        ],
    },
    "dinner": {
        "state": [
            (
                "Tuve ocho invitados a cenar {when} y, milagro, todo salió a tiempo. ¿Cómo guardo "
                "las sobras sin riesgos?",
                "Que se enfríen en menos de dos horas, reparte las ollas grandes en recipientes "
                "bajos, etiqueta con la fecha y cómetelo en tres días o congélalo. Al recalentar, "
                "que quede bien caliente y solo una vez.",
            ),
            (
                "Vinieron amigos a comer a casa {when}: el postre se desmoronó, pero nos reímos "
                "muchísimo. ¿Qué postre puedo dejar hecho la próxima vez sin que falle?",
                "Tiramisú, crumble de fruta, panna cotta o mousse de chocolate: se preparan el "
                "día antes y es muy difícil que salgan mal.",
            ),
        ],
        "ask": [
            "¿Qué día organicé un banquete en mi hogar?",
            "¿Cuándo tuvo {user} la mesa llena de gente?",
        ],
    },
    "parents": {
        "state": [
            (
                "Estuve en casa de mis padres {when} y vi que a mi padre le cuestan las escaleras. "
                "¿Qué pequeños cambios harían la casa más segura?",
                "Pasamanos a los dos lados de la escalera, bombillas más potentes y luces de "
                "noche, alfombrillas antideslizantes en el baño, fuera alfombras sueltas y lo de "
                "uso diario a la altura de la cintura. Algunos ayuntamientos hacen revisiones "
                "gratuitas para prevenir caídas.",
            ),
            (
                "Pasé el día con mis padres {when} y quieren un videoportero. ¿Cuál es el más "
                "fácil de usar?",
                "Uno de batería, sin cables, con una app sencilla y un timbre que se enchufe en "
                "la pared. Déjaselo instalado y quita los avisos de movimiento que no vayan a "
                "necesitar.",
            ),
        ],
        "ask": [
            "¿Cuándo visité a mi familia por última vez?",
            "¿Qué día fue {user} a visitar a sus viejos?",
        ],
    },
    "flu": {
        "state": [
            (
                "Empecé con fiebre {when} y sigo sin fuerzas. ¿Cuándo es seguro volver al trabajo?",
                "La pauta habitual es llevar veinticuatro horas sin fiebre sin tomar antitérmicos "
                "y sentirte capaz de trabajar. Hasta entonces, descanso y mucho líquido.",
            ),
            (
                "Di positivo en gripe {when}. ¿Qué tengo que tener en casa para los próximos días?",
                "Paracetamol o ibuprofeno, termómetro, suero oral, comida fácil (caldo, arroz, "
                "galletas, plátanos), limón con miel y pañuelos. Si te cuesta respirar, al médico "
                "sin esperar.",
            ),
        ],
        "ask": [
            "¿Cuándo me pilló aquel virus?",
            "¿Qué día enfermó {user}?",
        ],
    },
    "talk": {
        "state": [
            (
                "Di mi charla en el congreso regional {when}, ¡y vinieron cuarenta personas! "
                "¿Cómo convierto las diapositivas en un artículo para el blog?",
                "Un párrafo por bloque de diapositivas, las dos o tres mejores imágenes, una "
                "entrada que diga por qué importa y enlaces al final. Publícalo en menos de una "
                "semana, mientras la gente aún se acuerda.",
            ),
            (
                "Presenté delante de todo el departamento {when} y solo me tembló un poco la voz. "
                "¿Cómo controlo los nervios la próxima vez?",
                "Ensaya en voz alta tres veces, sobre todo el primer minuto; llega pronto a la "
                "sala y recuerda que el público quiere que te salga bien.",
            ),
        ],
        "ask": [
            "¿Cuándo hablé en público?",
            "¿Qué día fue la ponencia de {user}?",
        ],
    },
    "sofa": {
        "state": [
            (
                "Nos trajeron el sofá nuevo {when} y es un poco grande para el salón. ¿Cómo "
                "recoloco los muebles?",
                "El mueble más grande, contra la pared más larga; una alfombra pequeña delante "
                "para marcar la zona, baldas en la pared en vez de muebles y unos ochenta "
                "centímetros libres para pasar.",
            ),
            (
                "Por fin llegó el sofá {when}, después de ocho semanas de espera. ¿Cómo protejo "
                "la tapicería?",
                "Un protector antimanchas adecuado para esa tela, nada de sol directo, aspirarlo "
                "una vez por semana y, si se derrama algo, absorber a toques sin frotar.",
            ),
        ],
        "ask": [
            "¿Qué día me entregaron el sillón que había comprado?",
            "¿En qué fecha recibió {user} el mueble que había encargado?",
        ],
    },
    "camping": {
        "state": [
            (
                "Fuimos de acampada junto a un lago {when} y llovió toda la noche. ¿Cómo seco bien "
                "la tienda?",
                "Vuelve a montarla en casa, en el patio o colgada dentro, y que se seque del todo "
                "por dentro y por fuera antes de guardarla; si no, en pocos días sale moho.",
            ),
            (
                "Dormí en una tienda de campaña {when}, por primera vez en años. ¿Trucos para "
                "dormir mejor al aire libre?",
                "Una buena esterilla importa más que el saco; ponte un gorro, toma algo caliente "
                "antes de acostarte y lleva tapones. Busca suelo llano y duerme con la cabeza en "
                "la parte alta.",
            ),
        ],
        "ask": [
            "¿Cuándo pernocté en plena naturaleza?",
            "¿Qué día se fue {user} de camping?",
        ],
    },
}

MULTIHOP = {
    "child": {
        "a": [
            (
                "Mi {child} {name} necesita un disfraz para la función del colegio. ¿Alguna idea "
                "que se pueda hacer en una tarde?",
                "Disfraces rápidos: un robot de cartón, un superhéroe con capa y antifaz, un "
                "animal con orejas de fieltro y la nariz pintada, o un rey con corona de "
                "cartulina. Si me dices de qué va la obra, lo concreto más.",
            ),
            (
                "El jueves tengo tutoría con la profesora de mi {child} {name}. ¿Qué le debería "
                "preguntar?",
                "Qué se le da bien, en qué le cuesta más, cómo se lleva con los compañeros y qué "
                "podéis hacer en casa para ayudar. Pide ejemplos concretos, no solo notas.",
            ),
        ],
        "b": [
            (
                "¡{name} ha entrado en el equipo de {v}! Entrenan martes y jueves. ¿Cómo hacemos "
                "para que le dé tiempo a los deberes?",
                "Un hueco fijo para los deberes los días de entreno (nada más salir de clase o "
                "después de cenar), fines de semana más tranquilos y un vistazo cada domingo a lo "
                "que viene en la semana para que no se acumule nada.",
            ),
            (
                "{name} tiene campeonato de {v} este finde. ¿Qué meto en la mochila para un día "
                "entero de espera en la grada?",
                "Agua, tentempiés y una comida de verdad, ropa por capas, una silla plegable, una "
                "batería externa, un libro y una muda limpia por si acaso.",
            ),
        ],
        "ask": [
            "¿En qué compite mi {child}?",
            "¿Qué disciplina practica mi {child} fuera de las aulas?",
        ],
    },
    "pet": {
        "a": [
            (
                "Nuestro {species}, {name}, me despierta a las cinco para que le dé el desayuno. "
                "¿Cómo le quito esa costumbre?",
                "No respondas nada cuando te despierte (ni siquiera un «no»), dale de comer a una "
                "hora fija algo más tarde y plantéate un comedero automático. En una o dos "
                "semanas suele cambiar.",
            ),
            (
                "Quiero hacerle una chapa con el nombre a mi {species} {name}. ¿Qué datos pongo?",
                "Lo más importante es tu número de teléfono, y algo como «lleva microchip». "
                "Cuanto menos texto, más grande la letra y más fácil de leer.",
            ),
        ],
        "b": [
            (
                "El veterinario dice que {name} tiene {v}. ¿Qué le pregunto en la próxima "
                "revisión?",
                "Qué opciones de tratamiento hay y cuánto cuestan, cómo será la recuperación, qué "
                "señales deben hacerte llamar enseguida y cómo hacer que esté a gusto en casa.",
            ),
            (
                "A {name} le encontraron {v} el lunes. ¿Cómo consigo que repose durante la "
                "recuperación?",
                "Rutina estable, un rincón tranquilo para descansar, paseos o ratos de juego "
                "cortos y suaves, y juguetes de comida para que se entretenga con la cabeza. "
                "Pregunta al veterinario por ayudas calmantes si hace falta.",
            ),
        ],
        "ask": [
            "¿Qué le pasa de salud a mi {species}?",
            "¿Qué diagnóstico le dieron a mi {species}?",
        ],
    },
    "trip_friend": {
        "a": [
            (
                "En {month} voy a {city} a un congreso del trabajo. ¿Qué meto en la maleta para "
                "cuatro días?",
                "Dos conjuntos formales y uno informal, calzado cómodo para estar de pie, "
                "cargadores y batería externa, tarjetas de visita (o la versión digital) y una "
                "chaqueta fina, que en los auditorios el aire acondicionado va fuerte.",
            ),
            (
                "Tengo billetes para {city} en {month}: es para una feria, tres días de pie en el "
                "estand. ¿Cómo aguanto con energía?",
                "Acuéstate pronto la noche antes, zapatos cómodos, siéntate diez minutos cada dos "
                "horas, lleva agua y algo de picar, no alargues las cenas de trabajo y el café, "
                "solo por la mañana.",
            ),
        ],
        "b": [
            (
                "{name}, con quien estudié en la universidad, se acaba de mudar a {city}. ¿Me "
                "ayudas a escribirle para retomar el contacto después de tantos años?",
                "«¡Hola! Cuánto tiempo… Me he enterado de que has cambiado de aires y me he "
                "acordado de ti. ¿Qué tal todo? Me encantaría ponernos al día, aunque sea con una "
                "llamada».",
            ),
            (
                "{name}, con quien compartí piso hace años, ahora vive en {city}. ¿Qué le puedo "
                "mandar de regalo para su casa nueva?",
                "Algo pequeño y práctico para estrenar casa: una vela que huela bien, una planta "
                "que aguante el envío, un paño de cocina bonito o algún producto típico de donde "
                "vives tú.",
            ),
        ],
        "ask": [
            "¿A quién podría ver durante mi viaje de {month}?",
            "¿A qué viejo conocido podría visitar {user} cuando salga de viaje en {month}?",
        ],
    },
    "doctor": {
        "a": [
            (
                "El viernes tengo cita en el centro de salud con {name} y solo son diez minutos. "
                "¿Cómo los aprovecho?",
                "Apunta antes el problema principal, los síntomas con sus fechas y la medicación "
                "que tomas, y lleva dos o tres preguntas. Lo más importante, al principio, no al "
                "final.",
            ),
            (
                "Hace años que me atiende {name} en el ambulatorio y quiero mandarle una tarjeta "
                "de agradecimiento. ¿Qué pongo?",
                "«Gracias por todos estos años de atención paciente y cercana; me ha ayudado "
                "muchísimo. Un saludo muy afectuoso». Si hubo un momento concreto, añádelo en una "
                "frase.",
            ),
        ],
        "b": [
            (
                "Me ha dicho {name} que tengo que {v}. ¿Cómo consigo cumplirlo de verdad?",
                "Hazlo concreto y pequeño: decide cuándo y cómo, engánchalo a algo que ya haces "
                "cada día y márcalo en el calendario durante un mes.",
            ),
            (
                "Según {name}, desde ya me toca {v}. ¿Me lo organizas en un plan semanal sencillo?",
                "Claro: empieza con tres días fijos por semana, pon recordatorios en el móvil, "
                "revisa cómo ha ido cada domingo y sube cuando te resulte fácil.",
            ),
        ],
        "ask": [
            "¿Qué cambio de hábitos me han mandado en la consulta médica?",
            "¿Qué recomendación médica recibió {user} en su última consulta?",
        ],
    },
    "manager": {
        "a": [
            (
                "Esta semana ha llegado {name} para dirigir nuestro grupo. ¿Cómo preparo la "
                "primera reunión uno a uno?",
                "Pregunta por sus prioridades y cómo prefiere comunicarse, cuenta en qué estás y "
                "dónde necesitas apoyo, y acordad cada cuánto os vais a ver.",
            ),
            (
                "Con la reorganización ahora dependo de {name}. ¿Qué le pregunto en la primera "
                "reunión?",
                "Qué sería hacerlo bien dentro de seis meses, cómo le gusta recibir novedades, "
                "qué le preocupa más del área y cómo se suelen tomar las decisiones.",
            ),
        ],
        "b": [
            (
                "{name} nos pide {v} a partir de ahora. ¿Cómo planteo mis dudas sin que suene a "
                "queja?",
                "Primero reconoce el objetivo, luego explica el problema con un ejemplo concreto "
                "y propón una alternativa. En forma de pregunta, mejor que como oposición.",
            ),
            (
                "Nueva norma de {name}: hay que {v}. ¿Me ayudas a reorganizar la semana?",
                "Bloquea primero lo fijo, pon el trabajo que exige concentración en los huecos "
                "más largos y deja lo pequeño para los ratos sueltos. Pásame tu semana tipo y te "
                "hago un borrador.",
            ),
        ],
        "ask": [
            "¿Qué obligación nos ha impuesto en el trabajo mi superior?",
            "¿Qué exige últimamente a la plantilla la persona a la que reporta {user}?",
        ],
    },
}

WHEN = {
    "today": "esta mañana",
    "yesterday": "ayer",
    "two_days": "anteayer",
    "weekend": "el fin de semana pasado",
    "saturday": "el sábado pasado",
    "last_week": "la semana pasada",
}

GREETINGS = [
    ("¡Hola otra vez!", "¡Hola! ¿En qué te echo una mano hoy?"),
    (
        "Buenos días. Hoy tengo unas cuantas cosas que resolver.",
        "¡Buenos días! Cuéntame y vamos una por una.",
    ),
    ("¿Estás por ahí? Un par de preguntas rápidas.", "Aquí estoy. Dispara."),
    ("Holaaa, vuelvo a darte la lata, perdona.", "Nada que perdonar. ¿Qué necesitas?"),
    ("Buenas tardes, ¿me ayudas a organizar unas cosillas?", "Claro que sí. ¿Qué organizamos?"),
]

FOLLOWUPS = [
    ("Gracias, me sirve muchísimo.", "¡De nada! Ya me contarás qué tal."),
    (
        "¿Me lo puedes resumir un poco más?",
        "Claro, en corto: empieza por lo primero, sáltate lo accesorio y ajusta cuando veas cómo "
        "te funciona.",
    ),
    (
        "Genial, lo pruebo esta noche.",
        "¡Suerte! Si algo no sale como esperabas, cuéntame qué pasó y lo ajustamos.",
    ),
    ("Vale, entendido, tiene sentido.", "Perfecto. Si algo no queda claro, pregunta."),
    ("Buena idea, no se me había ocurrido.", "¡Me alegro de que te sirva!"),
    ("Eso es justo lo que necesitaba.", "¡Qué bien!"),
    (
        "Mmm, no sé si eso me encaja.",
        "Sin problema: dime qué falla (tiempo, dinero, espacio, gustos) y busco otra cosa.",
    ),
    (
        "¿Me lo pasas en una lista para hacerle captura?",
        "Aquí va: 1) el primer paso, 2) la tarea principal, 3) una comprobación al final. Cabe en "
        "una pantalla.",
    ),
    ("¡Ok, gracias!", "Para lo que necesites."),
]

FILLERS = [
    [
        "¿Qué diferencia hay en Python entre una lista y una tupla?",
        "La lista es mutable: puedes añadir, quitar o cambiar elementos. La tupla no se puede "
        "modificar una vez creada. Usa tuplas para datos fijos (unas coordenadas, una clave de "
        "diccionario) y listas para colecciones que cambian.",
        "¿Y los conjuntos para qué sirven?",
        "Para quitar duplicados o comprobar rápido si algo está dentro: `x in mi_conjunto` es "
        "mucho más rápido que buscar en una lista grande. No tienen orden, así que no cuentes "
        "con él.",
    ],
    [
        "Mi script lee un CSV y me salta `KeyError: 'fecha'`. ¿Qué significa?",
        "Que en el diccionario de esa fila no existe la clave 'fecha'. Casi siempre es la "
        "cabecera escrita de otra forma («Fecha», « fecha» con un espacio, o un BOM al principio "
        "del archivo). Imprime `reader.fieldnames` y verás los nombres exactos.",
        "¡Era el BOM! ¿Cómo me libro de él?",
        'Abre el archivo con `encoding="utf-8-sig"` y se elimina solo.',
    ],
    [
        "¿Cómo saco en SQL el número de pedidos por cliente, solo de los que tienen más de cinco?",
        "Con `GROUP BY` y `HAVING`: `SELECT cliente_id, COUNT(*) AS pedidos FROM pedidos GROUP BY "
        "cliente_id HAVING COUNT(*) > 5 ORDER BY pedidos DESC;`",
    ],
    [
        "¿Cómo se escribe un buen mensaje de commit?",
        "Una primera línea corta (unos 50 caracteres, en imperativo: «Corrige la redirección del "
        "login»), una línea en blanco y luego un cuerpo que explique por qué se hizo el cambio y "
        "qué hay que tener en cuenta. El qué ya lo cuenta el diff.",
    ],
    [
        "En JavaScript, ¿por qué un `setTimeout` dentro de un bucle me imprime siempre el mismo "
        "número?",
        "Porque las funciones se ejecutan cuando el bucle ya ha terminado y todas comparten la "
        "misma variable. Declara el contador con `let` en lugar de `var` y cada vuelta tendrá su "
        "propia copia.",
    ],
    [
        "¿Una expresión regular que valide más o menos un correo electrónico?",
        "Una práctica: `^[^@\\s]+@[^@\\s]+\\.[^@\\s]+$`, es decir, texto, arroba, texto, punto y "
        "texto. Validar un correo del todo con una regex no compensa; mejor mandar un mensaje de "
        "confirmación.",
    ],
    [
        "En Excel, el BUSCARV me devuelve #N/D todo el rato. ¿Qué estoy haciendo mal?",
        "Lo típico: el valor buscado y la tabla tienen formatos distintos (texto frente a "
        "número), hay espacios de más o falta FALSO en el último argumento y busca coincidencias "
        "aproximadas. Limpia con ESPACIOS y revisa los formatos.",
        "¿Y no hay algo mejor que BUSCARV?",
        "BUSCARX, si tu versión lo tiene: busca hacia cualquier lado, por defecto exige "
        "coincidencia exacta y deja poner un valor si no encuentra nada.",
    ],
    [
        "¿Me redactas un correo educado para reclamar a un cliente una factura vencida?",
        "Borrador:\n\nAsunto: Recordatorio de pago, factura n.º [número]\n\nBuenos días, "
        "[nombre]: le escribo para recordarle que la factura n.º [número], por importe de "
        "[cantidad] y con vencimiento el [fecha], sigue pendiente. Le adjunto una copia. ¿Podría "
        "indicarme cuándo tienen previsto el pago? Muchas gracias. Un saludo, [tu nombre]",
        "¿Puedes hacerlo un poco más firme? Es la segunda vez que la reclamo.",
        "Cambia el centro por: «…sigue pendiente y acumula ya [X] días de retraso. Le ruego que "
        "realice el pago antes del [fecha]. Si hay algún problema con la factura, "
        "comuníquemelo hoy para poder resolverlo». Firme, pero profesional.",
    ],
    [
        "¿Cómo rechazo una reunión sin quedar de borde?",
        "Da un motivo y una alternativa: «Esta vez no voy a poder entrar, estoy a tope con [X] "
        "esta semana. ¿Me pasáis luego el acta? Si queréis, os mando antes mis comentarios por "
        "escrito».",
    ],
    [
        "¿Me escribes una respuesta automática para una semana de vacaciones?",
        "«Hola: gracias por tu mensaje. Estoy de vacaciones hasta el [fecha] y apenas miraré el "
        "correo. Para cualquier urgencia, escribe a [nombre] ([correo]). Te contesto a la "
        "vuelta».",
    ],
    [
        "¿Cómo preparo la reunión de evaluación de fin de año?",
        "Reúne pruebas de lo que has conseguido, apunta el feedback que has recibido, piensa "
        "uno o dos objetivos para el año que viene y lleva una pregunta sobre tu desarrollo. "
        "Ve con ganas de escuchar tanto como de hablar.",
    ],
    [
        "¿Me resumes en qué consiste la técnica pomodoro?",
        "Veinticinco minutos de trabajo concentrado y cinco de descanso; cada cuatro pomodoros, "
        "un descanso de quince a treinta minutos. Una sola tarea por pomodoro, y lo que se te "
        "ocurra por el camino lo apuntas para después.",
        "¿Sirve también para trabajo creativo?",
        "A mucha gente veinticinco minutos se le quedan cortos para meterse a fondo; prueba con "
        "50/10. Lo que importa son bloques de concentración fijos y descansos de verdad, no los "
        "números exactos.",
    ],
    [
        "¿Cómo estructuro una intervención de cinco minutos?",
        "Un arranque que enganche (30 segundos), el problema (1 minuto), tu idea principal con "
        "un ejemplo (2 minutos y medio) y qué quieres que haga el público (1 minuto). En cinco "
        "minutos cabe una idea bien contada, no más.",
    ],
    [
        "¿Se escribe «a ver» o «haber» en «a ver si quedamos»?",
        "«A ver»: es la preposición más el verbo ver, como en «vamos a ver». «Haber» es el "
        "infinitivo del verbo (o un sustantivo: «en su haber»). Truco: si puedes cambiarlo por "
        "«veamos» o «ojalá», es «a ver».",
    ],
    [
        "¿Cómo me sale la tortilla de patatas jugosa por dentro?",
        "Patata en láminas finas pochada a fuego lento en bastante aceite (que se confite, no "
        "que se fría), bien escurrida y mezclada con el huevo batido unos minutos antes de "
        "cuajar. Sartén caliente, poco tiempo por cada lado y al plato.",
        "¿Con cebolla o sin cebolla?",
        "Es el gran debate: la cebolla pochada aporta dulzor y jugosidad; sin ella, sabe más a "
        "patata. Prueba las dos y decide tú.",
    ],
    [
        "¿Cuánto tiempo aguanta el arroz cocido en la nevera?",
        "Lo más seguro es tomarlo en un día. Enfríalo rápido (en menos de una hora), guárdalo "
        "tapado y recaliéntalo una sola vez y bien caliente: algunas bacterias del arroz dejan "
        "toxinas que no desaparecen al calentar.",
    ],
    [
        "Tengo tres plátanos demasiado maduros. ¿Qué hago con ellos?",
        "El clásico es un bizcocho de plátano, pero también valen tortitas, congelarlos para "
        "batidos, galletas de avena o unas gachas con canela.",
        "Venga, bizcocho. ¿Aceite o mantequilla?",
        "Las dos funcionan: con aceite queda más jugoso y aguanta tierno más días; con "
        "mantequilla sabe más. Mitad y mitad es un buen término medio.",
    ],
    [
        "¿Un truco para que las lentejas no queden aguadas?",
        "Pocas: caldo justo para cubrir, y ve añadiendo a medida que lo pidan. Haz un buen "
        "sofrito, y al final aplasta unas cuantas con el caldo o añade una patata chafada para "
        "espesar. Reposadas de un día para otro, mejoran.",
    ],
    [
        "¿Cómo hago un gazpacho que no repita?",
        "Quita el corazón y las semillas al pepino (o pélalo), usa poco ajo o quítale el "
        "germen, y deja reposar en la nevera un par de horas antes de servir. Un buen tomate "
        "maduro hace la mitad del trabajo.",
    ],
    [
        "¿Qué diferencia hay entre bicarbonato y levadura química?",
        "El bicarbonato necesita un ingrediente ácido en la receta (yogur, zumo de limón) para "
        "reaccionar; la levadura química ya lleva el ácido incorporado. No se pueden cambiar una "
        "por otra sin más.",
    ],
    [
        "¿Cómo cuido una sartén de hierro para que no se oxide?",
        "Lávala en caliente con agua y un cepillo (un poco de jabón no pasa nada), sécala al "
        "fuego y úntala con una capa finísima de aceite. Nunca la dejes en remojo.",
    ],
    [
        "Quiero ir a Roma cuatro días. ¿Cómo lo organizo sin agobiarme?",
        "Día 1: Coliseo, Foro y Palatino (con entrada reservada). Día 2: Vaticano por la mañana "
        "temprano y el Trastevere por la tarde. Día 3: Panteón, Navona, Fontana di Trevi y la "
        "plaza de España, a pie. Día 4: Villa Borghese (con reserva) y una comida larga antes "
        "de volver.",
        "¿Con cuánta antelación hay que reservar la Galería Borghese?",
        "En temporada alta, un par de semanas como mínimo; los turnos de primera hora vuelan. "
        "Las entradas tienen hora fija y no dejan entrar tarde.",
    ],
    [
        "¿Qué no puede faltar en el equipaje de mano de un vuelo largo?",
        "Medicamentos, cargadores y batería externa, una muda de ropa interior y una camiseta, "
        "la documentación, una botella vacía, auriculares, una prenda de abrigo y los objetos "
        "de valor.",
    ],
    [
        "Para una escapada corta al extranjero, ¿merece la pena un seguro de viaje?",
        "Casi siempre sí, sobre todo por la parte médica y por las cancelaciones. Dentro de la "
        "UE lleva además la tarjeta sanitaria europea, y mira si alguna tarjeta de crédito tuya "
        "ya incluye seguro antes de contratar otro.",
    ],
    [
        "¿Algún truco para encontrar vuelos baratos?",
        "Mira con tiempo, evita fechas de puente, sal entre semana, pon alertas de precio en un "
        "comparador y echa un ojo a aeropuertos cercanos. Y cuidado con las tarifas que no "
        "incluyen maleta.",
    ],
    [
        "Esta semana me duele la cabeza casi todas las tardes. ¿Qué suele provocarlo?",
        "Lo más habitual: beber poca agua, muchas horas de pantalla, saltarse comidas, dormir "
        "mal, la cafeína a deshoras o la tensión en cuello y hombros. Prueba unos días a beber "
        "más, hacer pausas de pantalla y comer bien a mediodía. Si es muy fuerte o va a más, "
        "consulta al médico.",
    ],
    [
        "¿Cuánta agua hay que beber al día de verdad?",
        "No hay una cifra única; la mayoría de adultos se regula bien bebiendo cuando tiene "
        "sed, normalmente entre litro y medio y dos litros, y más con calor o ejercicio. Una "
        "orina de color amarillo claro indica que vas bien.",
    ],
    [
        "Paso todo el día delante del ordenador y la espalda se resiente. ¿Qué estiramientos "
        "me recomiendas?",
        "Rodillas al pecho, gato-vaca, torsiones sentado, la postura del niño y un estiramiento "
        "de cadera en zancada, treinta segundos cada uno. Y levántate a caminar un poco cada "
        "treinta o cuarenta minutos.",
    ],
    [
        "No consigo dormirme antes de la una. ¿Qué funciona de verdad?",
        "Levantarte siempre a la misma hora (también el fin de semana), luz natural por la "
        "mañana, nada de café después de comer y pantallas tenues la última hora. Si tras veinte "
        "minutos en la cama sigues en vela, levántate a hacer algo tranquilo y vuelve cuando "
        "tengas sueño.",
    ],
    [
        "¿Qué le regalo a un compañero que se jubila? Tenemos unos treinta euros por cabeza.",
        "Algo para su nueva etapa: un buen libro de algo que le guste, una experiencia (una "
        "cata, una escapada de un día), una planta bonita o un álbum con mensajes de todo el "
        "equipo junto a una tarjeta regalo.",
    ],
    [
        "¿Qué se le regala a alguien que dice que no quiere nada?",
        "Experiencias o cosas que se gastan: una comida juntos, entradas para algo, una caja de "
        "productos ricos, o tu tiempo (cocinar para esa persona o ayudar con algo pendiente).",
    ],
    [
        "¿Ideas de regalo para una inauguración de piso que no sean una vela?",
        "Un buen aceite de oliva con una tabla de madera, una planta resistente, una vajilla o "
        "juego de té bonito, o un mapa enmarcado del barrio nuevo.",
    ],
    [
        "¿Cómo empiezo un fondo de emergencia?",
        "Abre una cuenta de ahorro aparte y de acceso inmediato, programa una transferencia "
        "automática el día de cobro (aunque sea pequeña), llega primero a un mes de gastos "
        "básicos y luego ve hacia tres.",
        "¿Y no es mejor pagar antes la tarjeta de crédito?",
        "Lo habitual es guardar primero un pequeño colchón y después atacar las deudas con "
        "interés alto antes de seguir ahorrando. El interés de una tarjeta casi siempre supera "
        "al que te da una cuenta.",
    ],
    [
        "¿En qué se diferencian un fondo indexado y un ETF?",
        "Los dos pueden replicar el mismo índice. El fondo se compra y se vende al valor "
        "liquidativo del día; el ETF cotiza en bolsa y se negocia durante la sesión como una "
        "acción. Mira las comisiones y, en España, que los traspasos entre fondos no tributan.",
    ],
    [
        "¿Hipoteca fija o variable? No me aclaro.",
        "La fija te da la misma cuota toda la vida del préstamo: pagas algo más a cambio de "
        "tranquilidad. La variable sigue al euríbor y puede salir más barata o más cara. Si un "
        "susto en la cuota te descuadraría las cuentas, la fija suele compensar; las mixtas son "
        "un término medio.",
    ],
    [
        "¿Qué tengo que revisar del borrador de la renta antes de confirmarlo?",
        "Datos personales y familiares, rendimientos del trabajo y retenciones, cuentas y "
        "alquileres, deducciones autonómicas (suelen faltar), aportaciones a planes de pensiones "
        "y donativos. Compara también con la declaración del año anterior por si algo no "
        "cuadra.",
    ],
    [
        "Me ha salido moho en el techo del baño. ¿Cómo lo quito?",
        "Con guantes y mascarilla, aplica un antimoho o lejía diluida, deja actuar diez minutos, "
        "limpia y seca bien. Luego ataca la causa: ventila más y deja el extractor encendido "
        "durante y después de la ducha.",
    ],
    [
        "El fregadero traga fatal. ¿Qué pruebo antes de llamar al fontanero?",
        "Primero, agua hirviendo; después, un desatascador de ventosa. Si no, desmonta y limpia "
        "el sifón de debajo (¡con un cubo debajo!). Bicarbonato con vinagre ayuda en atascos "
        "leves.",
    ],
    [
        "¿Cómo mantengo viva la albahaca de la ventana?",
        "Mucha luz, riego cuando la capa de arriba esté seca y pinza las puntas a menudo para "
        "que se ponga frondosa. Las macetas del súper traen demasiadas plantas: divídelas en "
        "tres.",
    ],
    [
        "Se me ha caído vino tinto en la alfombra. ¿Cómo lo saco?",
        "Absorbe con un paño limpio a toques (sin frotar), echa un poco de agua fría y vuelve a "
        "absorber; luego trata la mancha con agua, un chorrito de lavavajillas y vinagre. "
        "Aclara con agua fría y seca a toques.",
    ],
    [
        "¿Cómo hago que un dormitorio pequeño parezca más grande?",
        "Paredes claras, un espejo frente a la ventana, cama con almacenaje, apliques en la "
        "pared en vez de lámparas de mesilla y pocos muebles pero grandes, mejor que muchos "
        "pequeños.",
    ],
    [
        "¿Para qué sirve exactamente una VPN?",
        "Cifra tu tráfico y lo hace pasar por los servidores del proveedor, de modo que la red "
        "en la que estás (la wifi de una cafetería, por ejemplo) no ve lo que haces y las webs "
        "ven la dirección de la VPN. No te hace anónimo del todo.",
    ],
    [
        "¿Cómo creo una contraseña segura que pueda recordar?",
        "Una frase absurda de cuatro o cinco palabras al azar para la contraseña maestra y un "
        "gestor de contraseñas para todo lo demás. Y la verificación en dos pasos en las "
        "cuentas importantes.",
    ],
    [
        "El ventilador del portátil no para de sonar. ¿Qué reviso?",
        "Qué procesos se comen la CPU, limpia el polvo de las rejillas con aire comprimido, "
        "úsalo sobre una superficie dura y comprueba si hay actualizaciones. Tener cincuenta "
        "pestañas abiertas en el navegador es un clásico.",
    ],
    [
        "Explícame el interés compuesto como si tuviera doce años.",
        "Guardas 100 € y cada año te dan un 10 %: al cabo de un año tienes 110 €. El segundo "
        "año el 10 % se calcula sobre 110, así que ganas 11. Los intereses empiezan a dar "
        "intereses, y cuanto más tiempo pasa, más rápido crece.",
    ],
    [
        "¿Cómo organizo las comidas de la semana de forma sencilla?",
        "El domingo elige cinco cenas que compartan ingredientes, haz una sola lista de la "
        "compra, cocina doble dos de los días y usa las sobras para las comidas del día "
        "siguiente.",
    ],
]
